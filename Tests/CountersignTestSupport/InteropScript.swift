import Foundation

/// One of Tests/interop's Python servers (hostile proxy, broken server, CONNECT proxy, fake push services), each
/// of which prints its port (or ports, space-separated) first; stopped even when the test fails.
public final class InteropScript {
    public let process: Spawned
    public let port: Int
    public let ports: [Int]

    public init(script name: String, _ arguments: [String]) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("interop/\(name)").path
        process = try Spawned("/usr/bin/env", ["python3", script] + arguments, stdout: .pipe)
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = process.output!.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        let ports = String(decoding: line, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        guard let port = ports.first else {
            process.signal(SIGKILL)
            process.wait()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "\(name) printed no port"])
        }
        self.port = port
        self.ports = ports
    }

    deinit {
        if process.isRunning {
            process.signal(SIGKILL)
            process.wait()
        }
    }
}

extension InteropScript {
    /// Tests/interop/broken_server.py in one of its modes (silent, endless, drip…).
    public convenience init(_ mode: String) throws { try self.init(script: "broken_server.py", [mode]) }
}
