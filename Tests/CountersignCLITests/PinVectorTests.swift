import CountersignAPI
import CountersignClient
import CountersignCrypto
import Foundation
import Testing

/// `KeyPins` against the shared pin vectors (Tests/CountersignCryptoTests/Vectors/key_pins.json), the same
/// cases Tests/WebUnit/pins-vectors.test.mjs runs through the web client's pins.js.
@Suite struct PinVectorTests {
    struct File: Decodable { var cases: [Case] }
    struct Case: Decodable {
        var name: String
        var own: Own
        var pinned: Pinned?
        var directory: UserDirectory
        var now: String
        var send: Send
        var signers: [SignerCase]
    }
    struct Own: Decodable {
        var username: String
        var deviceId: String
        var signingKey: Base64URL?
    }
    struct Pinned: Decodable {
        var username: String
        var verified: Bool
        var trustedAt: String
        var devices: [PinnedKeys]
        var retired: [RetiredKey]
    }
    struct RetiredKey: Decodable {
        var deviceId: String
        var signingKey: Base64URL
        var retiredAt: String
    }
    struct PinnedKeys: Decodable {
        var id: String
        var name: String
        var signingKey: Base64URL
        var encryptionKey: Base64URL
    }
    struct Send: Decodable {
        var outcome: String
        var devices: [String]
        var linked: [String]
        var rotated: [String]
        var removed: [String]
    }
    struct SignerCase: Decodable {
        var keyId: String
        var signedAt: String
        var outcome: String
    }

    static func load() throws -> [Case] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("CountersignCryptoTests/Vectors/key_pins.json")
        return try APICoding.decoder().decode(File.self, from: Data(contentsOf: url)).cases
    }

    static func date(_ text: String) throws -> Date { try #require(WireDate.parse(text)) }

    /// The pins a case starts from, set up as a person's device would have them.
    static func pins(_ c: Case, at now: Date) throws -> KeyPins {
        var pins = KeyPins()
        guard let p = c.pinned else { return pins }
        let devices = try p.devices.map { d in
            PinnedDevice(
                id: d.id,
                name: d.name,
                signingKeyId: try #require(KeyPins.keyID(spki: d.signingKey.bytes)),
                encryptionKeyId: try #require(KeyPins.keyID(spki: d.encryptionKey.bytes)),
                signingKey: d.signingKey
            )
        }
        let trusted = try date(p.trustedAt)
        pins.pin(p.username, devices, now: trusted)
        if p.verified { pins.setVerified(p.username, true, now: trusted) }
        if !p.retired.isEmpty {
            pins.contacts[p.username]?.retired = try p.retired.map { r in
                RetiredPin(
                    deviceId: r.deviceId,
                    signingKeyId: try #require(KeyPins.keyID(spki: r.signingKey.bytes)),
                    signingKey: r.signingKey,
                    retiredAt: try date(r.retiredAt)
                )
            }
        }
        return pins
    }

    static func ownKeyID(_ c: Case) -> String? { c.own.signingKey.flatMap { KeyPins.keyID(spki: $0.bytes) } }

    @Test func theCasesAreThere() throws {
        let cases = try Self.load()
        #expect(cases.count >= 18)
        #expect(Set(cases.map(\.send.outcome)) == ["first-contact", "pinned", "changed", "refused"])
        #expect(Set(cases.flatMap(\.signers).map(\.outcome)) == ["pinned", "unverified", "refused", "retired"])
    }

    @Test(arguments: try PinVectorTests.load().map { $0.name })
    func theCheckBeforeSending(_ name: String) throws {
        let c = try #require(try Self.load().first { $0.name == name })
        let now = try Self.date(c.now)
        var pins = try Self.pins(c, at: now)
        let user = c.directory.username
        let outcome: String
        var linked: [String] = []
        var rotated: [String] = []
        var removed: [String] = []
        do {
            switch try pins.checkBeforeSending(
                c.directory,
                ownUsername: c.own.username,
                ownDeviceID: c.own.deviceId,
                ownKeyID: Self.ownKeyID(c),
                now: now
            ) {
            case .firstContact(let devices):
                outcome = "first-contact"
                pins.pin(user, devices, now: now)
            case .pinned(let r, let l, let gone):
                outcome = "pinned"
                rotated = r.map(\.deviceID)
                linked = l.map(\.device.id)
                removed = gone.map(\.id)
            }
        } catch PinError.changed {
            outcome = "changed"
        } catch PinError.unprovenKeys {
            outcome = "refused"
        }
        #expect(outcome == c.send.outcome)
        #expect(linked == c.send.linked && rotated == c.send.rotated && removed == c.send.removed)
        #expect((pins.contacts[user]?.devices.map(\.id) ?? []) == c.send.devices)
        if outcome != "first-contact" && !(linked.isEmpty && rotated.isEmpty && removed.isEmpty) {
            #expect(pins.contacts[user]?.changedAt == now, "following changes the safety number, said with a time")
        }
    }

    @Test(arguments: try PinVectorTests.load().map { $0.name })
    func theSignerOfAMessage(_ name: String) throws {
        let c = try #require(try Self.load().first { $0.name == name })
        let now = try Self.date(c.now)
        for s in c.signers {
            var pins = try Self.pins(c, at: now)
            let outcome: String
            do {
                let signer = try pins.signer(
                    sender: c.directory.username,
                    keyID: s.keyId,
                    signedAt: try Self.date(s.signedAt),
                    directory: c.directory,
                    ownUsername: c.own.username,
                    ownDeviceID: c.own.deviceId,
                    ownKeyID: Self.ownKeyID(c),
                    now: now
                )
                #expect(Hex.encode(signer.key.fingerprint.bytes) == s.keyId)
                outcome = "pinned"
            } catch PinError.unverifiedDevice(_, let device) {
                #expect(device.signingKeyId == s.keyId)
                outcome = "unverified"
            } catch PinError.unpinnedSigner, PinError.unprovenKeys {
                outcome = "refused"
            } catch PinError.signerRetired {
                outcome = "retired"
            }
            #expect(outcome == s.outcome, "\(s.keyId) signed at \(s.signedAt)")
        }
    }
}
