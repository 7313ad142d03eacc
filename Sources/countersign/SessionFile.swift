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

    static var directory: URL {
        let env = ProcessInfo.processInfo.environment
        if let dir = env["COUNTERSIGN_CONFIG_DIR"] { return URL(fileURLWithPath: dir) }
        let base = env["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: env["HOME"] ?? NSHomeDirectory()).appendingPathComponent(".config")
        return base.appendingPathComponent("countersign")
    }

    static var url: URL { directory.appendingPathComponent("session.json") }

    static func load() -> SessionFile? {
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(SessionFile.self, from: data)
    }

    /// Written to a private temporary file and renamed, so a reader never sees half a token.
    func save() throws {
        let dir = Self.directory
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        let tmp = dir.appendingPathComponent(".session.json.\(getpid())")
        let fd = open(tmp.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLIError.io("cannot write \(tmp.path): \(String(cString: strerror(errno)))") }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        guard written == data.count, rename(tmp.path, Self.url.path) == 0 else {
            unlink(tmp.path)
            throw CLIError.io("cannot write \(Self.url.path)")
        }
    }

    static func remove() { unlink(url.path) }
}
