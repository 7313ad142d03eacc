import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The signed-in session of `countersign account`, in $XDG_CONFIG_HOME/countersign/session.json (else
/// ~/.config/…): the server and bearer token, mode 0600 in a 0700 directory. COUNTERSIGN_CONFIG_DIR overrides.
struct SessionFile: Codable {
    var server: String
    var username: String
    var token: String
    var expiresAt: Date

    /// How to run countersign on this config directory again: with `--config-dir DIR` when this run was
    /// given one (Countersign.main marks it), so that a printed command to copy keeps the directory.
    static var invocation: String {
        let env = ProcessInfo.processInfo.environment
        guard env["COUNTERSIGN_CONFIG_DIR_FLAG"] == "1", let dir = env["COUNTERSIGN_CONFIG_DIR"] else {
            return "countersign"
        }
        let plain = dir.unicodeScalars.allSatisfy {
            $0.isASCII
                && ($0.properties.isAlphabetic || $0.properties.numericType != nil
                    || "/._-~+,=@:".unicodeScalars.contains($0))
        }
        return "countersign --config-dir "
            + (plain ? dir : "'" + dir.replacingOccurrences(of: "'", with: "'\\''") + "'")
    }

    static var directory: URL {
        let env = ProcessInfo.processInfo.environment
        if let dir = env["COUNTERSIGN_CONFIG_DIR"] { return URL(fileURLWithPath: dir) }
        let base =
            env["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: env["HOME"] ?? NSHomeDirectory()).appendingPathComponent(".config")
        return base.appendingPathComponent("countersign")
    }

    static var url: URL { directory.appendingPathComponent("session.json") }

    /// Nil when there is no session file. One that cannot be read is an error saying why (an unreadable
    /// config directory is not "not signed in"); a damaged one says to sign in again.
    static func load() throws -> SessionFile? {
        guard let data = try PrivateFiles.read(url) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(SessionFile.self, from: data)
        } catch {
            throw CLIError.io(
                "\(url.path) is damaged; sign in again with `countersign account login USER --server URL` (it replaces the file)"
            )
        }
    }

    /// Creates the config directory and checks that a session file can be written there, before a sign-in
    /// makes a session on the server that could then not be kept.
    static func prepare() throws {
        try PrivateFiles.directory(directory)
        if access(directory.path, W_OK | X_OK) != 0 {
            throw CLIError.io(PrivateFiles.cannotCreate(url.path, errno: errno))
        }
    }

    /// Written to a private temporary file and renamed, so a reader never sees half a token.
    func save() throws {
        let dir = Self.directory
        try PrivateFiles.directory(dir)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        let tmp = dir.appendingPathComponent(".session.json.\(getpid())")
        let fd = open(tmp.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLIError.io("cannot write \(Self.url.path): \(String(cString: strerror(errno)))") }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        guard written == data.count, rename(tmp.path, Self.url.path) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(tmp.path)
            throw CLIError.io("cannot write \(Self.url.path): \(why)")
        }
    }

    static func remove() { unlink(url.path) }
}
