import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why a device's local state (a `ConfigDirectory`) could not be read or written. Each case names the file
/// and what to do; the descriptions are the ones the CLI has always printed.
public enum LocalStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A file is there but cannot be read (`errno`); `config` is the directory whose modes to fix.
    case unreadable(path: String, errno: Int32, config: String)
    /// A file was read but does not hold what it should (truncated, edited, another format).
    case damaged(path: String, reason: String)
    /// A file could not be written (`errno`); nothing was replaced.
    case unwritable(path: String, errno: Int32)
    /// A directory could not be created (`errno`).
    case cannotCreateDirectory(path: String, errno: Int32)
    /// A file that must not be replaced could not be created (`errno`; EEXIST when it is already there).
    case cannotCreate(path: String, errno: Int32)
    /// Another run held the config directory's lock for longer than the wait allowed.
    case busy(lock: String, seconds: Int)

    public var description: String {
        switch self {
        case .unreadable(let path, let code, let config):
            let fix =
                code == EACCES || code == EPERM
                ? "; the config directory \(config) and its files must be yours and readable (chmod -R u+rwX \(config))"
                : ""
            return "cannot read \(path): \(Self.reason(code))\(fix)"
        case .damaged(let path, let reason):
            return "\(path) is damaged (\(reason)); move it away to start over"
        case .unwritable(let path, let code):
            return "cannot write \(path): \(Self.reason(code))"
        case .cannotCreateDirectory(let path, let code):
            return Self.cannotCreate(path, errno: code)
        case .cannotCreate(let path, let code):
            return "cannot create \(path): \(Self.reason(code))"
        case .busy(let lock, let seconds):
            return
                "another countersign run has held \(lock) for over \(seconds) s; nothing was changed: try again when it ends"
        }
    }

    /// "cannot create PATH: reason", with what to do when the parent is not writable.
    public static func cannotCreate(_ path: String, errno code: Int32) -> String {
        let parent = (path as NSString).deletingLastPathComponent
        let fix =
            code == EACCES || code == EROFS || code == EPERM
            ? "; make \(parent) writable for you, or set COUNTERSIGN_CONFIG_DIR to a directory of your own" : ""
        return "cannot create \(path): \(reason(code))\(fix)"
    }

    static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
}
