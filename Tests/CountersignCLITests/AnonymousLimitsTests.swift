import Foundation
import Testing

/// What an anonymous client can make the server hold (issue 19, 6): no body of an authenticated route is
/// read before its credentials are checked, and connections per address are capped.
@Suite struct AnonymousLimitsTests {
    /// Runs a Python snippet with the server's port as argv[1]; its stdout, one line.
    static func python(_ t: CLI, _ script: String, port: String) throws -> String {
        let r = try t.run("/usr/bin/env", ["python3", "-c", script, port])
        try #require(r.status == 0, "\(r.stderr)")
        return r.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func port(_ server: ServeTests.Server) -> String { String(server.url.split(separator: ":").last!) }

    @Test func anAuthenticatedRouteAnswers401BeforeReadingTheBody() throws {
        let t = try CLI()
        let server = try ServeTests.Server(database: "sqlite:" + t.path("a.sqlite"), in: t.dir)
        defer { _ = server.signal(SIGTERM) }
        // Headers announce 1.5 MB and no byte of it follows: the answer must not wait for it.
        let script = """
            import socket, sys, time
            for path, auth in (("/v1/messages", ""), ("/v1/messages", "Authorization: Bearer csd_nosuchsession\\r\\n"),
                               ("/v1/devices/current/acks", ""), ("/v1/authenticator/logs", "")):
                s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
                start = time.time()
                s.sendall(f"POST {path} HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n{auth}Content-Length: 1500000\\r\\n\\r\\n".encode())
                head = s.recv(200).split(b"\\r\\n")[0].decode()
                print(path, head, round(time.time() - start, 1))
                s.close()
            """
        let lines = try Self.python(t, script, port: Self.port(server)).split(separator: "\n")
        #expect(lines.count == 4, "\(lines)")
        for line in lines {
            let parts = line.split(separator: " ")
            #expect(line.contains("HTTP/1.1 401") && Double(parts.last!)! < 2, "answered before the body: \(line)")
        }
    }

    @Test func connectionsPerAddressAreCapped() throws {
        let t = try CLI()
        let server = try ServeTests.Server(
            database: "sqlite:" + t.path("a.sqlite"),
            in: t.dir,
            environment: ["COUNTERSIGN_CONNECTIONS_PER_ADDRESS": "8"]
        )
        defer { _ = server.signal(SIGTERM) }
        let script = """
            import socket, sys
            port = int(sys.argv[1])
            held = [socket.create_connection(("127.0.0.1", port), timeout=3) for _ in range(8)]
            extra = socket.create_connection(("127.0.0.1", port), timeout=3)
            try:
                over = "closed" if extra.recv(1) == b"" else "open"
            except socket.timeout:
                over = "open"
            except ConnectionResetError:
                over = "closed"
            held.pop().close()
            # The freed place is served once the server has seen the close: retried (bounded) on a loaded
            # machine, where that may take longer than a moment.
            import time
            deadline = time.time() + 20
            while True:
                again = socket.create_connection(("127.0.0.1", port), timeout=20)
                again.sendall(b"GET /openapi.yaml HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
                try:
                    head = again.recv(12)
                except ConnectionResetError:
                    head = b""
                if head or time.time() > deadline:
                    break
                again.close()
                time.sleep(0.2)
            print(over, head.decode())
            """
        let out = try Self.python(t, script, port: Self.port(server))
        #expect(out == "closed HTTP/1.1 200", "the 9th is closed at once, and a freed place is served: \(out)")
    }
}
