import ArgumentParser
import CountersignAPI
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The file holding `GET /metrics`'s bearer token (`--metrics-token-file`). A file, not a flag or a
/// variable, so that the token shows in no process listing or unit file; Prometheus reads the same file
/// (`authorization: {credentials_file: …}`). A path that does not exist yet gets a new random token,
/// made private, so the first start of a unit that names one needs no other step.
enum MetricsTokenFile {
    static let minimumLength = 16
    static let maximumLength = 1024

    /// The token at `path`, made first if there is no file there. Refusals say what to do.
    /// `random` makes a new token's 32 bytes (the system's generator; a test may pass its own).
    static func token(
        at path: String,
        random: () -> [UInt8] = {
            var system = SystemRandomNumberGenerator()
            return (0..<32).map { _ in UInt8.random(in: 0...255, using: &system) }
        },
        announce: (String) -> Void
    ) throws -> String {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 {
            let token = Base64URL(random()).text
            let line = Array((token + "\n").utf8)
            let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd) == 0
            close(fd)
            guard written == line.count, synced else {
                unlink(path)
                throw ValidationError(
                    "cannot write a new metrics token to \(path): \(String(cString: strerror(errno)))"
                )
            }
            announce("wrote a new metrics token to \(path); give it to Prometheus as its bearer token")
            return token
        }
        guard errno == EEXIST else {
            throw ValidationError(
                "cannot create the metrics token file \(path): \(String(cString: strerror(errno))); name a file in a directory this user may write, or one that exists"
            )
        }
        let bytes = try SecretFile.read(path, what: "the metrics token file", maximum: maximumLength + 2)
        let token = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.count >= minimumLength, token.count <= maximumLength,
            token.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) })
        else {
            throw ValidationError(
                "the metrics token in \(path) must be \(minimumLength) to \(maximumLength) printable ASCII characters without spaces; delete the file to have a new one made"
            )
        }
        return token
    }
}
