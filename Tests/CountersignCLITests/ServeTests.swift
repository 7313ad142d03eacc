import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The real `countersign serve` process: the printed URL, clean shutdown, and durability across SIGKILL.
@Suite struct ServeTests {
    final class Server {
        let process = Process()
        let url: String

        init(database: String, in dir: URL) throws {
            process.executableURL = URL(fileURLWithPath: CLI.binary)
            process.arguments = ["serve", "--port", "0", "--database", database, "--captcha", "off"]
            process.currentDirectoryURL = dir
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            var line = Data()
            let deadline = Date().addingTimeInterval(60)
            while !line.contains(UInt8(ascii: "\n")), Date() < deadline {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                line += chunk
            }
            let text = String(decoding: line, as: UTF8.self)
            guard let range = text.range(of: "http://[^ ]+", options: .regularExpression) else {
                process.terminate()
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "no URL printed: \(text)"])
            }
            url = String(text[range])
            #expect(text.hasPrefix("countersign listening on http://127.0.0.1:"))
        }

        func signal(_ s: Int32) -> Int32 {
            kill(process.processIdentifier, s)
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    static func request(_ method: String, _ url: String, json: [String: Any]? = nil, token: String? = nil) async throws -> (Int, [String: Any]) {
        var r = URLRequest(url: URL(string: url)!)
        r.httpMethod = method
        if let json {
            r.httpBody = try JSONSerialization.data(withJSONObject: json)
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let token { r.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: r)
        return ((response as! HTTPURLResponse).statusCode, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
    }

    @Test func killedServerLosesNoAcknowledgedAccountOrSession() async throws {
        let t = try CLI()
        let db = "sqlite:" + t.path("data.sqlite")
        var server = try Server(database: db, in: t.dir)
        #expect(try await Self.request("GET", server.url + "/healthz").0 == 200)
        var tokens: [String] = []
        // 8: the server allows 10 registrations per address per hour.
        for i in 0..<8 {
            let created = try await Self.request("POST", server.url + "/v1/accounts",
                                                 json: ["username": "user\(i)", "password": "correct horse", "name": "U", "lastname": "Ser"])
            try #require(created.0 == 201, "registration \(i): \(created)")
            let session = try await Self.request("POST", server.url + "/v1/sessions", json: ["username": "user\(i)", "password": "correct horse"])
            tokens.append(try #require(session.1["token"] as? String, "sign-in \(i): \(session)"))
        }
        #expect(server.signal(SIGKILL) != 0)
        server = try Server(database: db, in: t.dir)
        for (i, token) in tokens.enumerated() {
            let me = try await Self.request("GET", server.url + "/v1/me", token: token)
            #expect(me.0 == 200 && me.1["username"] as? String == "user\(i)", "session \(i) survived SIGKILL")
        }
        #expect(server.signal(SIGTERM) == 0, "SIGTERM shuts down cleanly")
        // And after a clean restart the data is still there.
        server = try Server(database: db, in: t.dir)
        #expect(try await Self.request("POST", server.url + "/v1/sessions", json: ["username": "user7", "password": "correct horse"]).0 == 201)
        #expect(server.signal(SIGINT) == 0)
    }

    @Test func badDatabaseArgumentsFailClearly() throws {
        let t = try CLI()
        let r = try t.cs("serve", "--database", "mysql://x")
        #expect(r.status != 0 && r.stderr.contains("sqlite:PATH or postgres://"), "\(r.stderr)")
        let missing = try t.cs("serve", "--database", "sqlite:/nonexistent-dir/x.sqlite", "--port", "0")
        #expect(missing.status != 0 && missing.stderr.contains("does not exist"), "\(missing.stderr)")
        let pw = try t.cs("serve", "--database", "postgres://u:secret@127.0.0.1:1/db", "--port", "0")
        #expect(pw.status != 0 && !pw.stderr.contains("secret"), "the password never reaches the terminal: \(pw.stderr)")
    }
}
