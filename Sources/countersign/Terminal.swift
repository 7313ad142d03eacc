import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Passphrases and progress: the only places the tool talks to a terminal.
enum Terminal {
    static var stderrIsTTY: Bool { isatty(2) == 1 }

    static func warn(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// `text` with control characters (C0, DEL, C1) escaped, so a sender-chosen string cannot drive the terminal.
    static func printable(_ text: String) -> String {
        text.unicodeScalars.map { s in
            s.value < 0x20 || (0x7f...0x9f).contains(s.value) ? "\\u{\(String(s.value, radix: 16))}" : String(s)
        }.joined()
    }

    /// First line of the file, without its line ending.
    static func passphrase(fromFile path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError.io("cannot read the passphrase file \(path)")
        }
        let line = data.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false).first ?? []
        var bytes = Array(line)
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard !bytes.isEmpty else { throw CLIError.usage("the passphrase file \(path) has an empty first line") }
        return bytes
    }

    /// Reads one line from /dev/tty with echo off.
    static func ask(_ prompt: String) throws -> [UInt8] {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            throw CLIError.usage("no terminal to ask for a passphrase; use --passphrase-file")
        }
        defer { close(fd) }
        _ = prompt.withCString { Glibc.write(fd, $0, strlen($0)) }
        var old = termios()
        tcgetattr(fd, &old)
        var quiet = old
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(fd, TCSAFLUSH, &quiet)
        defer {
            tcsetattr(fd, TCSAFLUSH, &old)
            _ = Glibc.write(fd, "\n", 1)
        }
        var line: [UInt8] = []
        var c: UInt8 = 0
        while Glibc.read(fd, &c, 1) == 1, c != UInt8(ascii: "\n") { line.append(c) }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return line
    }

    /// A "label: 123 MiB / 1.0 GiB" line on stderr, redrawn at most ten times a second, only on a terminal.
    final class Progress {
        private let label: String
        private let total: Int?
        private var last = Date.distantPast
        private var shown = false

        init?(label: String, total: Int?) {
            guard Terminal.stderrIsTTY else { return nil }
            self.label = label
            self.total = total
        }

        func update(_ done: Int) {
            let now = Date()
            guard now.timeIntervalSince(last) >= 0.1 else { return }
            last = now
            shown = true
            var line = "\r\(label): \(Self.size(done))"
            if let total, total > 0 { line += " / \(Self.size(total)) (\(min(100, done * 100 / total))%)" }
            FileHandle.standardError.write(Data((line + "\u{1b}[K").utf8))
        }

        func finish() {
            if shown { FileHandle.standardError.write(Data("\r\u{1b}[K".utf8)) }
        }

        static func size(_ n: Int) -> String {
            if n >= 1 << 30 { return String(format: "%.1f GiB", Double(n) / Double(1 << 30)) }
            if n >= 1 << 20 { return String(format: "%.0f MiB", Double(n) / Double(1 << 20)) }
            return String(format: "%.0f KiB", Double(n) / 1024)
        }
    }
}
