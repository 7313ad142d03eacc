import CountersignClient
import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

/// An authenticator's own files and commands: its passcode secret at rest (issue 19, 16), its status and
/// unpairing (issue 19, 20).
@Suite struct AuthenticatorCLITests {
    typealias Dir = MFACLITests.Dir

    /// authenticator.json as a whole.
    static func file(_ d: Dir) throws -> [String: Any] {
        let data = try #require(FileManager.default.contents(atPath: d.file("authenticator.json")))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func state(_ d: Dir) throws -> [String: Any] {
        let data = try #require(FileManager.default.contents(atPath: d.file("authenticator.json")))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try #require(object["state"] as? [String: Any], "\(object)")
    }

    /// RFC 6238's test secret ("12345678901234567890"), in base32 for oathtool and base64url for the file.
    static let knownSecretBase32 = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
    static let knownSecretBase64URL = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTA"

    /// "tablet", another authenticator of alice's, whose file holds `value` (phone's sealed secret) as `field`.
    static func pairedWithForeign(
        _ field: String,
        _ value: Any?,
        _ t: CLI,
        _ alice: Dir,
        _ server: ServeTests.Server
    ) throws -> Dir {
        let tablet = Dir(t: t, name: "tablet")
        #expect(try MFACLITests.pair(tablet, try MFACLITests.pairingKey(alice).key, server: server).status == 0)
        let url = URL(fileURLWithPath: tablet.file("authenticator.json"))
        var object = try Self.file(tablet)
        var state = try #require(object["state"] as? [String: Any])
        state[field] = value
        object["state"] = state
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        return tablet
    }

    /// "phone", paired to alice's account with its key under the passphrase in the file `pass`.
    static func pairWithPassphrase(_ t: CLI, _ alice: Dir, _ server: ServeTests.Server) throws -> Dir {
        try t.write("pass", Data("phone pass\n".utf8))
        let phone = Dir(t: t, name: "phone")
        let (key, _) = try MFACLITests.pairingKey(alice)
        let paired = try phone.cs(
            "authenticator",
            "pair",
            key,
            "--name",
            "phone",
            "--server",
            server.url,
            "--passphrase-file",
            t.path("pass")
        )
        try #require(paired.status == 0, "\(paired.stderr)")
        return phone
    }

    /// The TOTP secret once sat in clear in authenticator.json although the key beside it asks for a
    /// passphrase. It is sealed to that key now; a clear file from before is sealed the first time the
    /// key is unlocked, and says so.
    @Test func thePasscodeSecretIsSealedToTheKeyAndAClearFileIsSealedOnFirstUse() throws {
        let (t, server, alice, _) = try MFACLITests.setUp()
        defer { _ = server.signal(SIGTERM) }
        let phone = try Self.pairWithPassphrase(t, alice, server)
        var state = try Self.state(phone)
        #expect(state["totpSecret"] == nil, "no secret in clear: \(state)")
        let sealed = try #require(state["sealedTotpSecret"] as? String, "\(state)")
        #expect(sealed.count > 100)
        let otp = try phone.cs("authenticator", "otp", "--passphrase-file", t.path("pass"))
        #expect(
            otp.status == 0 && otp.text.range(of: "^[0-9]{6} [0-9]{1,2}\n$", options: .regularExpression) != nil,
            "\(otp.text) \(otp.stderr)"
        )
        #expect(!otp.stderr.contains("now sealed"))
        let wrongPass = try phone.cs("authenticator", "otp", "--passphrase-file", t.path("pw"))
        #expect(wrongPass.status != 0 && wrongPass.text.isEmpty, "\(wrongPass.text)")

        // The file as an earlier version wrote it: the secret in clear (a known one, to check the codes).
        state["totpSecret"] = Self.knownSecretBase64URL
        state.removeValue(forKey: "sealedTotpSecret")
        let url = URL(fileURLWithPath: phone.file("authenticator.json"))
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        object["state"] = state
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        let before = Int(Date().timeIntervalSince1970)
        let migrated = try phone.cs("authenticator", "otp", "--passphrase-file", t.path("pass"))
        let after = Int(Date().timeIntervalSince1970)
        #expect(
            migrated.status == 0 && migrated.stderr.contains("now sealed to the authenticator's key"),
            "\(migrated.stderr)"
        )
        let code = String(migrated.text.prefix(6))
        let expected = try Set(
            [before, after].map { at in
                try t.run("oathtool", ["--totp", "-b", Self.knownSecretBase32, "-N", "@\(at)"]).text.trimmingCharacters(
                    in: .whitespacesAndNewlines
                )
            }
        )
        #expect(expected.contains(code), "the earlier file's secret still gives the codes: \(code) vs \(expected)")
        let resealed = try Self.state(phone)
        #expect(resealed["totpSecret"] == nil && resealed["sealedTotpSecret"] is String, "\(resealed)")
        #expect(!String(decoding: try Data(contentsOf: url), as: UTF8.self).contains(Self.knownSecretBase64URL))
        #expect(MessagingCLITests.mode(phone.file("authenticator.json")) == 0o600)
        let again = try phone.cs("authenticator", "otp", "--passphrase-file", t.path("pass"))
        #expect(again.status == 0 && !again.stderr.contains("now sealed"), "\(again.stderr)")

        // A sealed secret from another authenticator's file does not open here.
        let tablet = try Self.pairedWithForeign("sealedTotpSecret", resealed["sealedTotpSecret"], t, alice, server)
        let foreign = try tablet.cs("authenticator", "otp")
        #expect(
            foreign.status != 0 && foreign.text.isEmpty && foreign.stderr.contains("damaged"),
            "\(foreign.text) \(foreign.stderr)"
        )
    }
}

extension AuthenticatorCLITests {
    /// The device session token (30 days) sat in clear in authenticator.json: it is sealed to the key as the
    /// passcode secret is, a clear one from an earlier version is sealed on first use, and a sealed token
    /// moved from another authenticator's file does not open.
    @Test func theSessionTokenIsSealedToTheKeyAndAClearOneIsSealedOnFirstUse() async throws {
        let (t, server, alice, _) = try MFACLITests.setUp()
        defer { _ = server.signal(SIGTERM) }
        let phone = try Self.pairWithPassphrase(t, alice, server)
        let url = URL(fileURLWithPath: phone.file("authenticator.json"))
        let state = try Self.state(phone)
        let sealed = try #require(state["sealedSessionToken"] as? String, "\(state)")
        #expect(state["sessionToken"] == nil && sealed.count > 100, "\(state)")
        #expect(!String(decoding: try Data(contentsOf: url), as: UTF8.self).contains("csd_"), "no token in clear")
        // The sealed token is the one used: the file is not rewritten with a renewed one.
        let pending = try phone.cs("authenticator", "pending", "--json", "--passphrase-file", t.path("pass"))
        #expect(pending.status == 0 && pending.text == "[]\n", "\(pending.text) \(pending.stderr)")
        #expect(try Self.state(phone)["sealedSessionToken"] as? String == sealed)
        let wrongPass = try phone.cs("authenticator", "pending", "--json", "--passphrase-file", t.path("pw"))
        #expect(wrongPass.status != 0 && wrongPass.text.isEmpty, "\(wrongPass.text)")

        // As an earlier version wrote it: a live session's token in clear. Its first use seals it, ends that
        // session and opens another, so the clear copy (in a backup, say) opens nothing.
        let pem = try String(
            contentsOfFile: phone.file(try #require(Self.file(phone)["keyFile"] as? String)),
            encoding: .utf8
        )
        let identity = try Identity(pem: pem) { Array("phone pass".utf8) }
        let deviceID = try #require(state["deviceId"] as? String)
        let opener = CountersignClient(server: URL(string: server.url)!)
        let old = try await opener.openDeviceSession(deviceID: deviceID, signing: identity).token
        #expect(try await ServeTests.request("GET", server.url + "/v1/authenticator/challenges", token: old).0 == 200)
        var earlier = state
        earlier["sessionToken"] = old
        earlier.removeValue(forKey: "sealedSessionToken")
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        object["state"] = earlier
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        let migrated = try phone.cs("authenticator", "pending", "--json", "--passphrase-file", t.path("pass"))
        #expect(
            migrated.status == 0 && migrated.text == "[]\n"
                && migrated.stderr.contains("now sealed to the authenticator's key"),
            "\(migrated.text) \(migrated.stderr)"
        )
        let resealed = try Self.state(phone)
        #expect(resealed["sessionToken"] == nil && resealed["sealedSessionToken"] is String, "\(resealed)")
        #expect(!String(decoding: try Data(contentsOf: url), as: UTF8.self).contains("csd_"))
        #expect(try Self.file(phone)["replaceSession"] == nil, "replaced once")
        #expect(
            try await ServeTests.request("GET", server.url + "/v1/authenticator/challenges", token: old).0 == 401,
            "the session the clear token opened has ended"
        )
        let after = try phone.cs("authenticator", "pending", "--json", "--passphrase-file", t.path("pass"))
        #expect(after.status == 0 && !after.stderr.contains("sealed"), "\(after.stderr)")
        #expect(MessagingCLITests.mode(phone.file("authenticator.json")) == 0o600)

        // A sealed token from another authenticator's file does not open here.
        let tablet = try Self.pairedWithForeign("sealedSessionToken", resealed["sealedSessionToken"], t, alice, server)
        let foreign = try tablet.cs("authenticator", "pending", "--json")
        #expect(
            foreign.status != 0 && foreign.text.isEmpty && foreign.stderr.contains("damaged"),
            "\(foreign.text) \(foreign.stderr)"
        )
    }

    /// `authenticator status` and `unpair` (issue 19, 20): an authenticator could not say whose it was or
    /// leave its account.
    @Test func statusAndUnpair() throws {
        let (t, server, alice, _) = try MFACLITests.setUp()
        defer { _ = server.signal(SIGTERM) }
        let phone = Dir(t: t, name: "phone")
        let tablet = Dir(t: t, name: "tablet")
        #expect(try MFACLITests.pair(phone, try MFACLITests.pairingKey(alice).key, server: server).status == 0)
        let status = try phone.cs("authenticator", "status")
        #expect(
            status.status == 0 && status.text.contains("(\"phone\") for alice on \(server.url)")
                && status.text.contains("push approvals on"),
            "\(status.text) \(status.stderr)"
        )
        #expect(try phone.cs("authenticator", "push", "off").status == 0)
        let json = try phone.cs("authenticator", "status", "--json")
        let object = try #require(
            try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any],
            "\(json.text) \(json.stderr)"
        )
        #expect(
            object["username"] as? String == "alice" && object["name"] as? String == "phone"
                && object["pushAllowed"] as? Bool == false
                && object["server"] as? String == server.url && object["deviceId"] is String
                && object["fingerprint"] is String,
            "\(object)"
        )

        // The only second factor: refused, nothing changes.
        let only = try phone.cs("authenticator", "unpair")
        #expect(
            only.status != 0 && only.stderr.contains("only second factor")
                && only.stderr.contains("Nothing was changed"),
            "\(only.stderr)"
        )
        #expect(FileManager.default.fileExists(atPath: phone.file("authenticator.json")))

        #expect(try MFACLITests.pair(tablet, try MFACLITests.pairingKey(alice).key, server: server).status == 0)
        let unpaired = try phone.cs("authenticator", "unpair")
        #expect(
            unpaired.status == 0 && unpaired.text.contains("unpaired authenticator")
                && unpaired.text.contains("from alice"),
            "\(unpaired.text) \(unpaired.stderr)"
        )
        #expect(!FileManager.default.fileExists(atPath: phone.file("authenticator.json")))
        #expect(
            ((try? FileManager.default.contentsOfDirectory(atPath: phone.file("keys"))) ?? []).isEmpty,
            "its key is gone too"
        )
        let mfa = try alice.cs("account", "mfa", "status")
        #expect(
            mfa.text.contains("authenticators: 1") && mfa.text.contains("\"tablet\"")
                && !mfa.text.contains("\"phone\""),
            "\(mfa.text)"
        )
        let gone = try phone.cs("authenticator", "status")
        #expect(gone.status != 0 && gone.stderr.contains("no authenticator in"), "\(gone.stderr)")
    }
}
