import Foundation
import Testing

/// One config directory: a user's device. `countersign` runs in it with COUNTERSIGN_CONFIG_DIR passed per
/// run, never set process-wide, because tests run in parallel.
public struct DeviceDirectory: Sendable {
    public let t: CLI
    public let name: String
    public var dir: String { t.path(name) }

    public init(t: CLI, name: String) {
        self.t = t
        self.name = name
    }

    @discardableResult
    public func cs(_ args: String..., stdin: Data? = nil) throws -> CLI.Output { try cs(args, stdin: stdin) }

    @discardableResult
    public func cs(_ args: [String], stdin: Data? = nil) throws -> CLI.Output {
        try t.run("/usr/bin/env", ["COUNTERSIGN_CONFIG_DIR=\(dir)", CLI.binary] + args, stdin: stdin)
    }

    public func json(_ args: String...) throws -> [[String: Any]] {
        let r = try t.run("/usr/bin/env", ["COUNTERSIGN_CONFIG_DIR=\(dir)", CLI.binary] + args)
        try #require(r.status == 0, "\(args): \(r.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]], "\(r.text)")
    }

    public func file(_ name: String) -> String { dir + "/" + name }
    public var deviceID: String? {
        guard let data = FileManager.default.contents(atPath: file("device.json")),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object["deviceId"] as? String
    }
    /// device.json says the server revoked this device (kept so `read` still opens what is stored).
    public var revoked: Bool {
        guard let data = FileManager.default.contents(atPath: file("device.json")),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return false }
        return object["revokedAt"] is String
    }
}
