import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Passphrases and progress: the only places the tool talks to a terminal.
enum Terminal {
    static var stderrIsTTY: Bool { isatty(2) == 1 }
    static var stdinIsTTY: Bool { isatty(0) == 1 }

    static func warn(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// `text` with control characters (C0, DEL, C1) escaped, so a sender-chosen string cannot drive the terminal.
    static func printable(_ text: String, keepingLineBreaks: Bool = false) -> String {
        text.unicodeScalars.map { s in
            if keepingLineBreaks, s == "\n" { return "\n" }
            return isUnsafe(s.value) ? "\\u{\(String(s.value, radix: 16))}" : String(s)
        }.joined()
    }

    /// C0, DEL, C1, the line, paragraph and bidirectional controls that reorder or split what is shown, and
    /// the invisible ones that make two different names look the same (zero-width characters, soft hyphen,
    /// word joiners, byte order mark, tag characters).
    static func isUnsafe(_ v: UInt32) -> Bool {
        v < 0x20 || (0x7f...0x9f).contains(v) || (0x2028...0x202e).contains(v) || (0x2066...0x2069).contains(v)
            || (0x200b...0x200f).contains(v) || v == 0x061c || v == 0x00ad || (0x2060...0x2064).contains(v)
            || v == 0xfeff
            || (0xe0000...0xe007f).contains(v)
    }

    /// JSON text for standard output with the same characters written as `\u` escapes (JSONSerialization
    /// escapes only C0): still the same JSON to a parser, and nothing a server or sender chose reaches the
    /// terminal raw.
    static func json(_ data: Data) -> String {
        String(decoding: data, as: UTF8.self).unicodeScalars.map { s -> String in
            // C0 inside strings is escaped already; outside them only the layout's line breaks and spaces occur.
            guard s.value >= 0x7f, isUnsafe(s.value) else { return String(s) }
            return String(s).utf16.map { String(format: "\\u%04x", $0) }.joined()
        }.joined()
    }

    /// What `--json` prints: `object` as JSON with sorted keys and unescaped slashes, made safe by
    /// `json(_:)`; spread over indented lines, or on one line when not `pretty`.
    static func printJSON(_ object: Any, pretty: Bool = true) throws {
        var options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes]
        if pretty { options.insert(.prettyPrinted) }
        print(json(try JSONSerialization.data(withJSONObject: object, options: options)))
    }

    /// The longest first line a passphrase or password file may have.
    static let maxSecretLine = 4096

    /// First line of the file, without its line ending. Read as a stream, a byte at a time, so that pipes
    /// (`<(echo pw)`, /dev/stdin) work and nothing past the line is consumed from a shared standard input.
    /// `what` is "passphrase" or "password", for the messages.
    static func passphrase(fromFile path: String, what: String = "passphrase") throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw CLIError.io("cannot read the \(what) file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var line: [UInt8] = []
        var c: UInt8 = 0
        while true {
            let n = Glibc.read(fd, &c, 1)
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else {
                throw CLIError.io("cannot read the \(what) file \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 || c == UInt8(ascii: "\n") { break }
            line.append(c)
            guard line.count <= maxSecretLine + 1 else {
                throw CLIError.usage(
                    "the first line of the \(what) file \(path) is over \(maxSecretLine) bytes; put only the \(what) on it"
                )
            }
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        guard line.count <= maxSecretLine else {
            throw CLIError.usage(
                "the first line of the \(what) file \(path) is over \(maxSecretLine) bytes; put only the \(what) on it"
            )
        }
        guard !line.isEmpty else { throw CLIError.usage("the \(what) file \(path) has an empty first line") }
        return line
    }

    /// Reads one line from /dev/tty with echo off. Without a terminal, says what is asked for (`what`)
    /// and how to give it `instead`, which must name the calling command's own flags.
    static func ask(
        _ prompt: String,
        what: String = "passphrase",
        instead: String = "use --passphrase-file FILE"
    ) throws -> [UInt8] {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError.usage("no terminal to ask for the \(what); \(instead)") }
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

    /// A new key's passphrase: none with `--no-passphrase`, the first line of `--passphrase-file`, or asked
    /// twice on the terminal. `what` names the key in the messages, `unchanged` says what a mismatch leaves.
    static func newPassphrase(
        file: String?,
        none: Bool,
        prompt: String,
        what: String,
        unchanged: String
    ) throws -> [UInt8]? {
        if none { return nil }
        if let file { return try passphrase(fromFile: file) }
        let instead = "use --passphrase-file FILE, or --no-passphrase to store \(what) unencrypted"
        let first = try ask(prompt, instead: instead)
        guard !first.isEmpty else {
            throw CLIError.usage("empty passphrase; use --no-passphrase to store the key unencrypted")
        }
        guard try ask("Repeat passphrase: ", instead: instead) == first else {
            throw CLIError.usage("the passphrases do not match; \(unchanged)")
        }
        return first
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
