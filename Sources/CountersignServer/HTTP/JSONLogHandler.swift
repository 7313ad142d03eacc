import Foundation
import Logging
import Synchronization

/// `serve --log-format json`: one JSON object per line on standard error, for log shippers (journald,
/// Loki, Elasticsearch): `time` (RFC 3339, UTC, milliseconds), `level`, `label`, `source`, `message`,
/// `metadata` (an object of strings, arrays and objects) and `error` when a call passed one. The same
/// lines as the text format: what is logged is the caller's business, and no caller logs a password, a
/// token, a key or a message (a test greps a whole run's logs for every one it used).
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let label: String
    private static let output = Mutex(FileHandle.standardError)

    public init(label: String) {
        self.label = label
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = LoggingSystem.metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let explicit = event.metadata { merged.merge(explicit) { $1 } }
        var object: [String: Any] = [
            "time": Self.timestamp(Date()),
            "level": event.level.rawValue,
            "label": label,
            "source": event.source,
            "message": event.message.description,
        ]
        if !merged.isEmpty { object["metadata"] = merged.mapValues(Self.json) }
        if let error = event.error { object["error"] = String(describing: error) }
        guard
            var line = try? JSONSerialization.data(
                withJSONObject: object,
                options: [.sortedKeys, .withoutEscapingSlashes]
            )
        else { return }
        line.append(0x0A)
        // One write per line, under a lock: lines from several threads never interleave. A failed write (a
        // closed pipe, a full disk) loses the line, as the text format does, and never stops the server.
        Self.output.withLock { try? $0.write(contentsOf: line) }
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let s): return s
        case .stringConvertible(let c): return c.description
        case .array(let a): return a.map(json)
        case .dictionary(let d): return d.mapValues(json)
        }
    }

    private static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
