import CountersignTestSupport
import Foundation
import Testing

/// `serve --log-format json` at the most verbose level over a whole run (registration, sign-in, a failed
/// sign-in, devices with a passphrase, a message sent and read, an authenticator paired): every line is
/// one JSON object, and no password, passphrase, token, key or message text the run used is in them.
@Suite struct LogSecretsTests {
    typealias Dir = MessagingCLITests.Device

    @Test func jsonLogsOfAWholeRunHoldNoSecretItUsed() throws {
        let (t, server, d) = try MessagingCLITests.setUp(
            ["alice", "bob"],
            passphrase: ["bob"],
            serverEnvironment: ["COUNTERSIGN_LOG_LEVEL": "trace"],
            serverArguments: ["--log-format", "json"],
            serverLog: "server.log"
        )
        let (alice, bob) = (d["alice"]!, d["bob"]!)
        let text = "meet me by the old mill at noon 7f3a"
        let id = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", text))
        #expect(try bob.cs("inbox", "--passphrase-file", t.path("pass")).status == 0)
        let read = try bob.cs("read", id, "--passphrase-file", t.path("pass"))
        #expect(read.status == 0 && read.text == text, "\(read.stderr)")
        try t.write("wrong", Data("wrong horse battery\n".utf8))
        let failed = try alice.cs(
            "account",
            "login",
            "alice",
            "--password-file",
            t.path("wrong"),
            "--server",
            server.url
        )
        #expect(failed.status != 0)
        let (pairingKey, _) = try MFACLITests.pairingKey(alice)
        let phone = Dir(t: t, name: "phone")
        #expect(try MFACLITests.pair(phone, pairingKey, server: server).status == 0)
        #expect(server.signal(SIGTERM) == 0)

        var secrets: Set<String> = ["correct horse", "device pass", "wrong horse battery", text, pairingKey]
        // The metrics token: ServiceLifecycle once logged the whole configuration, token included, at debug level.
        let metricsToken = try String(contentsOfFile: server.metricsTokenFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(metricsToken.count >= 32)
        secrets.insert(metricsToken)
        for name in ["alice", "bob", "phone"] { secrets.formUnion(try Self.secrets(under: t.path(name))) }
        // Each CLI's session token, bob's device session and key, the authenticator's token at least.
        #expect(secrets.count >= 10, "\(secrets.count) secrets found in the CLIs' files")

        let log = String(decoding: try Data(contentsOf: URL(fileURLWithPath: t.path("server.log"))), as: UTF8.self)
        let lines = log.split(separator: "\n")
        #expect(lines.count >= 5, "\(log)")
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(
                object?["time"] is String && object?["level"] is String && object?["message"] is String,
                "not a JSON log line: \(line)"
            )
        }
        #expect(log.contains("\"message\":\"Server started"), "\(log.prefix(500))")
        for secret in secrets { #expect(!log.contains(secret), "a secret of \(secret.count) characters is in the log") }
    }

    /// Strings a CLI keeps that are secret: JSON values under names that say token, secret, key, passphrase
    /// or private (8 characters or more, in files at any depth), and the base64 lines of PEM private keys.
    static func secrets(under directory: String) throws -> Set<String> {
        var found: Set<String> = []
        let names = try #require(FileManager.default.subpathsOfDirectory(atPath: directory) as [String]?)
        for name in names {
            guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { continue }
            if let json = try? JSONSerialization.jsonObject(with: data) { collect(json, under: "", into: &found) }
            let text = String(decoding: data, as: UTF8.self)
            if text.contains("PRIVATE KEY-----") {
                for line in text.split(separator: "\n") where !line.hasPrefix("-----") && line.count >= 16 {
                    found.insert(String(line))
                }
            }
        }
        return found
    }

    static func collect(_ value: Any, under key: String, into found: inout Set<String>) {
        switch value {
        case let object as [String: Any]:
            for (k, v) in object { collect(v, under: k, into: &found) }
        case let array as [Any]:
            for v in array { collect(v, under: key, into: &found) }
        case let string as String:
            let lowered = key.lowercased()
            let secretName = ["token", "secret", "key", "passphrase", "private"].contains { lowered.contains($0) }
            if secretName, string.count >= 8, !lowered.contains("public") { found.insert(string) }
        default:
            break
        }
    }
}
