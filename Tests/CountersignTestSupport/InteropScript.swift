import Foundation

/// One of Tests/interop's Python servers (hostile proxy, broken server, CONNECT proxy), each of which
/// prints its port first; stopped even when the test fails.
public final class InteropScript {
    public let process: Spawned
    public let port: Int

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
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            process.signal(SIGKILL)
            process.wait()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "\(name) printed no port"])
        }
        self.port = port
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
