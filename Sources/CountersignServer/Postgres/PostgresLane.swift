import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// One PostgreSQL connection of its own, on an event loop thread of its own, for a hot path that runs
/// one unit of work at a time: the send batch writer, a lane of grouped device-session reads. The pool
/// shares its loops with HTTP and hands every statement between threads; a lane's work runs on its
/// thread (`executor`) from the first statement to the last, and answers its callers once.
/// The connection opens on first use and again after it closed (a restarted or unreachable server
/// fails that unit of work alone; the next one reconnects).
final class PostgresLane: Sendable {
    let executor: EventLoopTaskExecutor
    private let configuration: PostgresConnection.Configuration
    private let id: Int
    private let logger: Logger
    private let connection = Mutex<PostgresConnection?>(nil)

    init(loop: any EventLoop, configuration: PostgresConnection.Configuration, id: Int, logger: Logger) {
        executor = EventLoopTaskExecutor(loop)
        self.configuration = configuration; self.id = id; self.logger = logger
    }

    /// `body` with the lane's open connection. Call it from a task that prefers `executor` (the lane's
    /// drains do), or every statement pays the handoffs the lane exists to avoid.
    func run<T>(_ body: (PostgresConnection, Logger) async throws -> T) async throws -> T {
        let open: PostgresConnection
        if let c = connection.withLock({ $0 }), !c.isClosed {
            open = c
        } else {
            open = try await PostgresConnection.connect(on: executor.loop, configuration: configuration, id: id, logger: logger)
            connection.withLock { $0 = open }
        }
        return try await body(open, logger)
    }

    func close() async {
        let c = connection.withLock { c in defer { c = nil }; return c }
        try? await c?.close()
    }
}

/// The lanes of a PostgreSQL server: one for send batches, `PostgresSessionReads.lanes` for session
/// reads, each on its own thread of one group.
struct PostgresLanes: Sendable {
    let group: MultiThreadedEventLoopGroup
    let send: PostgresLane
    let sessions: [PostgresLane]

    /// Planner settings of the lane connections. A lane runs only its few named statements (the session
    /// read, the send batch's lock, reads and inserts), and each is a lookup of a handful of rows by
    /// primary or unique key, or an insert from arrays: the right plan is index scans and nested loops
    /// at any table size. So a lane plans each statement once (a generic plan) with sequential scans,
    /// hash and merge joins priced out, and the plan stays that shape whether it was made when the tables
    /// were empty or large (the failure that `auto` showed: a plan made while a table was small kept
    /// scanning it). Planning every execution instead cost 120-150 microseconds each, about a fifth of
    /// PostgreSQL's CPU in `bench-messages.sh postgres`. `PostgresLaneTests` checks the plans' shape.
    static let plannerSettings = [("plan_cache_mode", "force_generic_plan"), ("enable_seqscan", "off"),
                                  ("enable_hashjoin", "off"), ("enable_mergejoin", "off")]

    init(configuration base: PostgresConnection.Configuration, logger: Logger) {
        var configuration = base
        configuration.options.additionalStartupParameters.removeAll { name, _ in Self.plannerSettings.contains { $0.0 == name } }
        configuration.options.additionalStartupParameters += Self.plannerSettings
        let loops = 1 + PostgresSessionReads.lanes
        group = MultiThreadedEventLoopGroup(numberOfThreads: loops)
        let threads = Array(group.makeIterator())
        send = PostgresLane(loop: threads[0], configuration: configuration, id: 0, logger: logger)
        sessions = (1..<loops).map { PostgresLane(loop: threads[$0], configuration: configuration, id: $0, logger: logger) }
    }

    func close() async {
        await send.close()
        for lane in sessions { await lane.close() }
        try? await group.shutdownGracefully()
    }
}
