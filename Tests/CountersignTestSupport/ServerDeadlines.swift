import Foundation
import Testing

/// `countersign` runs measured by /usr/bin/time, for ServerDeadlineTests in CountersignCLITests (broken
/// servers) and in CountersignSystemTests (a real `countersign serve`).
public enum ServerDeadlines {
    public struct Measured: Sendable {
        public var output: CLI.Output
        public var wall: Double
        public var cpu: Double
        public var maxRSSKiB: Int
    }

    /// `countersign ARGS` in config directory `dir` under /usr/bin/time: wall clock, user + system CPU, peak RSS.
    public static func measured(_ t: CLI, dir: String, _ args: [String]) throws -> Measured {
        let stats = t.path("time-\(UUID().uuidString)")
        let output = try t.run(
            "/usr/bin/time",
            ["-f", "%e %U %S %M", "-o", stats, "/usr/bin/env", "COUNTERSIGN_CONFIG_DIR=\(t.path(dir))", CLI.binary]
                + args
        )
        let fields =
            String(decoding: FileManager.default.contents(atPath: stats) ?? Data(), as: UTF8.self)
            .split(whereSeparator: \.isNewline).last?.split(separator: " ").compactMap { Double($0) } ?? []
        try #require(fields.count == 4, "no /usr/bin/time line: \(output.stderr)")
        return Measured(output: output, wall: fields[0], cpu: fields[1] + fields[2], maxRSSKiB: Int(fields[3]))
    }

    /// `account register alice` against `server`, measured.
    public static func register(_ t: CLI, _ server: String) throws -> Measured {
        try t.write("pw", Data("correct horse\n".utf8))
        return try measured(
            t,
            dir: "cfg",
            [
                "account", "register", "alice", "--name", "N", "--lastname", "L", "--password-file", t.path("pw"),
                "--server", server,
            ]
        )
    }
}
