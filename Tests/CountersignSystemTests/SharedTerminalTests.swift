import CountersignTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Two commands writing to one terminal (issue 19, 7): `account login` waiting for a push in one, and
/// `authenticator approve` with the wrong number in the other, once showed
/// `…check the numberthe number did not match…`. The login wrote its error one byte per write(2) (the
/// argument parser's error printer puts each byte to unbuffered stderr), so the authenticator's line,
/// written meanwhile, landed inside it. Each message must reach the terminal in one write.
@Suite struct SharedTerminalTests {
    /// A FIFO standing in for the terminal both commands write their standard error to; every read is
    /// kept as it came, so a message split across writes shows as split.
    final class SharedTerminal: @unchecked Sendable {
        let path: String
        private let fd: Int32
        private let lock = NSLock()
        private var reads: [Data] = []
        private let done = DispatchSemaphore(value: 0)
        static let end = Data([0, 0x45, 0x4e, 0x44])  // NUL "END": written by the test once both exited

        init(_ path: String) throws {
            self.path = path
            guard mkfifo(path, 0o600) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["call": "mkfifo"]) }
            // Read and write: never blocks on open, and never sees end-of-file while the commands come and go.
            fd = open(path, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { throw CocoaError(.fileReadUnknown, userInfo: ["call": "open"]) }
            Thread { [self] in
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let n = read(fd, &buffer, buffer.count)
                    guard n > 0 else { break }
                    let chunk = Data(buffer[0..<n])
                    lock.withLock { reads.append(chunk) }
                    if chunk.range(of: Self.end) != nil { break }
                }
                done.signal()
            }.start()
        }

        /// Every read so far, once the end marker is through (the commands must have exited).
        func finish() -> [String] {
            _ = Self.end.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            _ = done.wait(timeout: .now() + 10)
            close(fd)
            return lock.withLock { reads }.map { String(decoding: $0.filter { $0 != 0 }, as: UTF8.self) }
                .map { $0.replacingOccurrences(of: "END", with: "") }
        }
    }

    @Test func aWrongNumberLeavesEachCommandsMessageOnItsOwnLine() throws {
        let (t, server, alice, laptop) = try MFACLITests.setUp()
        defer { _ = server.signal(SIGTERM) }
        let phone = MFACLITests.Dir(t: t, name: "phone")
        #expect(try MFACLITests.pair(phone, try MFACLITests.pairingKey(alice).key, server: server).status == 0)
        let terminal = try SharedTerminal(t.path("tty"))

        let login = try Spawned(
            CLI.binary,
            ["account", "login", "alice", "--password-file", t.path("pw"), "--server", server.url],
            environment: ["COUNTERSIGN_CONFIG_DIR": laptop.dir],
            directory: t.dir.path,
            stdout: .pipe,
            stderr: .file(terminal.path)
        )
        defer { if login.isRunning { login.signal(SIGKILL) } }
        var shown = Data()
        while !String(decoding: shown, as: UTF8.self).contains("\n") {
            let chunk = login.output!.availableData
            if chunk.isEmpty { break }
            shown += chunk
        }
        let line = String(decoding: shown, as: UTF8.self)
        let number = try #require(
            line.range(of: "[0-9]+", options: .regularExpression).map { String(line[$0]) },
            "\(line)"
        )
        let wrong = String(format: "%02d", (Int(number)! + 1) % 100)
        let id = try #require(try MFACLITests.pending(phone).first?["id"] as? String)
        let approve = try Spawned(
            CLI.binary,
            ["authenticator", "approve", id, "--number", wrong],
            environment: ["COUNTERSIGN_CONFIG_DIR": phone.dir],
            directory: t.dir.path,
            stdout: .null,
            stderr: .file(terminal.path)
        )
        #expect(approve.wait() != 0)
        #expect(login.wait() != 0)
        let reads = terminal.finish()
        let text = reads.joined()
        let lines = text.split(separator: "\n").map(String.init)
        #expect(
            lines.contains {
                $0.hasPrefix("Error: sign-in FAILED: ") && $0.hasSuffix("sign in again and check the number")
            }
                && lines.contains("the number did not match: the sign-in failed") && !text.contains("numberthe"),
            "\(text)"
        )
        // The login's error arrived in one piece: written at once, nothing can land inside it.
        #expect(
            reads.contains { $0.contains("Error: sign-in FAILED: ") && $0.contains("check the number\n") },
            "the error came in \(reads.count) reads: \(reads)"
        )
    }
}
