import FluentPostgresDriver
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SQLKit
import Synchronization

/// Push signals between nodes over PostgreSQL: NOTIFY on the pool, LISTEN on one dedicated connection.
/// A node applies its own signals at once and ignores their echo (each payload starts with the node's
/// id). `due` signals are coalesced like sends are: while one NOTIFY is in flight, accounts gather and go
/// together in the next, so a burst of sends costs a few NOTIFYs, not one each.
final class PostgresPushBus: PushBus {
    static let channel = "countersign_push"
    let url: String
    let database: any SQLDatabase
    let node: String
    let logger: Logger
    private let deliverLocal: @Sendable (PushSignal) -> Void
    private struct Outbox {
        var due: Set<String> = []
        var other: [PushSignal] = []
        var sending = false
    }
    private let outbox = Mutex(Outbox())

    init(
        url: String,
        database: any SQLDatabase,
        node: String,
        logger: Logger,
        deliverLocal: @escaping @Sendable (PushSignal) -> Void
    ) {
        self.url = url
        self.database = database
        self.node = node
        self.logger = logger
        self.deliverLocal = deliverLocal
    }

    package func publish(_ signal: PushSignal) {
        deliverLocal(signal)
        let start = outbox.withLock { o -> Bool in
            if case .due(let accounts) = signal { o.due.formUnion(accounts) } else { o.other.append(signal) }
            guard !o.sending else { return false }
            o.sending = true
            return true
        }
        if start { Task { await self.drain() } }
    }

    private func drain() async {
        while true {
            let signals = outbox.withLock { o -> [PushSignal] in
                var s = o.other
                if !o.due.isEmpty { s.append(.due(accounts: o.due.sorted())) }
                o.other = []
                o.due = []
                if s.isEmpty { o.sending = false }
                return s
            }
            guard !signals.isEmpty else { return }
            for signal in signals.flatMap({ $0.chunked() }) {
                do {
                    try await database.raw("SELECT pg_notify(\(bind: Self.channel), \(bind: node + "|" + signal.text))")
                        .run()
                } catch {
                    // Other nodes miss this one; their periodic resync and the clients' reconnects recover.
                    logger.warning("push NOTIFY failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
                }
            }
        }
    }

    package func run(
        deliver: @escaping @Sendable (PushSignal) -> Void,
        resync: @escaping @Sendable () -> Void
    ) async throws {
        let configuration = try SQLPostgresConfiguration(url: url).coreConfiguration
        var delay = 0.1
        var id = 0
        while !Task.isCancelled {
            do {
                id += 1
                let connection = try await PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.any(),
                    configuration: configuration,
                    id: id,
                    logger: logger
                )
                do {
                    try await connection.listen(on: Self.channel) { notifications in
                        // Whatever was published while this node was not listening is not replayed: look again.
                        resync()
                        delay = 0.1
                        for try await notification in notifications {
                            let payload = notification.payload
                            guard let bar = payload.firstIndex(of: "|"), payload[..<bar] != node,
                                let signal = PushSignal(text: String(payload[payload.index(after: bar)...]))
                            else { continue }
                            deliver(signal)
                        }
                    }
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "push LISTEN connection lost; reconnecting",
                    metadata: ["error": "\(String(reflecting: type(of: error)))"]
                )
            }
            try? await Task.sleep(for: .seconds(delay))
            delay = min(delay * 2, 5)
        }
    }
}
