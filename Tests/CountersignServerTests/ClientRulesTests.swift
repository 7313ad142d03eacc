import CountersignAPI
import CountersignCrypto
import Foundation
import Testing

@testable import CountersignClient
@testable import CountersignServer

/// The rules the web client shares with the Swift code, from the vector file its unit tests read
/// (Tests/WebUnit/rules.test.mjs, against js/rules.js and js/bytes.js): a rule changed on one side fails here
/// or there until the file and the other side follow.
struct ClientRulesTests {
    struct Vectors: Decodable {
        struct Username: Decodable {
            struct Accepted: Decodable {
                var raw: String
                var normalised: String
            }
            struct Refused: Decodable {
                var raw: String
                var comment: String
            }
            var description: String
            var accepted: [Accepted]
            var refused: [Refused]
        }
        struct Base64Text: Decodable {
            struct Accepted: Decodable {
                var text: String
                var hex: String
            }
            struct Refused: Decodable {
                var text: String
                var comment: String
            }
            var accepted: [Accepted]
            var refused: [Refused]
        }
        struct Fingerprint: Decodable {
            var hex: String
            var shown: String
        }
        var username: Username
        var base64url: Base64Text
        var keyIdFingerprint: [Fingerprint]
        var pinHistoryLimit: Int
        var directoryDeviceLimit: Int
        var reauthChoicesMinutes: [Int]
    }

    /// Tests/CountersignCryptoTests/Vectors/client_rules.json, beside the vectors the crypto tests read.
    static func vectors() throws -> Vectors {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("CountersignCryptoTests/Vectors/client_rules.json")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(Vectors.self, from: Data(contentsOf: url))
    }

    @Test func usernamesFollowTheSharedCases() throws {
        let v = try Self.vectors().username
        #expect(UsernameRule.description == v.description)
        for c in v.accepted {
            #expect(UsernameRule.normalised(c.raw) == c.normalised, "\(c.raw.debugDescription)")
            #expect(try Username(parsing: c.raw).text == c.normalised)
        }
        for c in v.refused {
            #expect(UsernameRule.normalised(c.raw) == nil, "\(c.raw.debugDescription): \(c.comment)")
        }
    }

    @Test func base64URLFollowsTheSharedCases() throws {
        let v = try Self.vectors().base64url
        for c in v.accepted {
            #expect(Base64URL(text: c.text).map { Hex.encode($0.bytes) } == c.hex, "\(c.text)")
            #expect(Base64URL(Hex.decode(c.hex) ?? []).text == c.text)
        }
        for c in v.refused {
            #expect(Base64URL(text: c.text) == nil, "\(c.text.debugDescription): \(c.comment)")
        }
    }

    @Test func keyIDsAreShownAsTheSharedCasesSay() throws {
        for c in try Self.vectors().keyIdFingerprint {
            #expect(KeyPins.fingerprint(hex: c.hex) == c.shown, "\(c.hex)")
        }
    }

    @Test func pinLimitsAndReauthenticationChoicesAreTheSharedOnes() throws {
        let v = try Self.vectors()
        #expect(KeyPins.maxHistory == v.pinHistoryLimit)
        #expect(ServerConfiguration().maxDevicesPerAccount == v.directoryDeviceLimit)
        #expect(AccountService.reauthChoices == v.reauthChoicesMinutes)
        #expect(AccountSettings.reauthChoices == v.reauthChoicesMinutes)
    }
}
