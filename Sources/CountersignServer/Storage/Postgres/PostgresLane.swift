import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// One PostgreSQL connection of its own, on an event loop thread of its own, for a hot path that runs
/// one unit of work at a time: the send batch writer, a lane of grouped device-session reads. The pool
/// shares its loops with HTTP and hands every statement between threads; a lane's work runs on its
/// thread (`executor`) from the first statement to the last, and answers its callers once.
/// Units of work run one at a time, in arrival order (a transaction never interleaves with another on
/// the connection). The connection opens on first use and again after it closed: a dropped connection
/// fails the unit of work that was using it, and the next one reconnects. Once `close()` is called
/// every unit of work fails with `Closed`.
final class PostgresLane: Sendable {
    /// The server is shutting down: the lane opens no connection any more.
    struct Closed: Error, CustomStringConvertible {
        var description: String { "the server is shutting down; its PostgreSQL lane is closed" }
    }

    /// A unit of work took longer than `deadline`: the lane closed its connection (failing the statement
    /// in flight) and the next unit reconnects. A half-open connection (a peer gone without a FIN) would
    /// otherwise hold the lane, and every send or session read behind it, until TCP gives up (~15 minutes).
    struct DeadlineExceeded: Error, CustomStringConvertible {
        let seconds: Int64
        var description: String { "PostgreSQL did not answer within \(seconds) s; the connection was closed" }
    }

    let executor: EventLoopTaskExecutor
    /// Longer than any unit of work takes when the database answers (a send batch of 128 is ~10 ms).
    let deadline: TimeAmount
    private let configuration: PostgresConnection.Configuration
    private let id: Int
    private let logger: Logger
    private struct State {
        var connection: PostgresConnection?
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var closed = false
    }
    private let state = Mutex(State())

    init(
        loop: any EventLoop,
        configuration: PostgresConnection.Configuration,
        id: Int,
        logger: Logger,
        deadline: TimeAmount = .seconds(10)
    ) {
        executor = EventLoopTaskExecutor(loop)
        self.deadline = deadline
        self.configuration = configuration
        self.id = id
        self.logger = logger
    }

    /// `body` with the lane's open connection, on the lane's thread, after every unit of work that
    /// arrived before it. The `isClosed` check and the first statement run in one turn of the loop:
    /// PostgresNIO never answers a statement written after its channel was torn down.
    func run<T: Sendable>(_ body: (PostgresConnection, Logger) async throws -> T) async throws -> T {
        // Before moving to the loop: once closed, its group shuts down and drops what is sent to it.
        guard !state.withLock({ $0.closed }) else { throw Closed() }
        return try await withTaskExecutorPreference(executor) {
            await acquire()
            defer { release() }
            let connection = try await open()
            let started = NIODeadline.now()
            // Set before the timer is cancelled: a timer already taken off the queue in the same turn of
            // the loop still runs, and must not close the connection the next unit is about to use.
            let finished = UnitFinished()
            let timer = executor.loop.scheduleTask(in: deadline) { () -> Void in
                guard !finished.value else { return }
                let closing: EventLoopFuture<Void> = connection.close()
                _ = closing
            }
            defer {
                finished.value = true
                timer.cancel()
            }
            do {
                return try await body(connection, logger)
            } catch  where NIODeadline.now() - started >= deadline {
                logger.warning("PostgreSQL lane \(id): no answer within the deadline; connection closed")
                throw DeadlineExceeded(seconds: deadline.nanoseconds / 1_000_000_000)
            }
        }
    }

    /// Whether a unit of work is over; read and written on the lane's loop only (the unit runs there, and
    /// so does its timer).
    private final class UnitFinished: @unchecked Sendable {
        var value = false
    }

    private func open() async throws -> PostgresConnection {
        let current = state.withLock { s -> (PostgresConnection?, closed: Bool) in (s.connection, s.closed) }
        guard !current.closed else { throw Closed() }
        if let c = current.0, !c.isClosed { return c }
        let c = try await PostgresConnection.connect(
            on: executor.loop,
            configuration: configuration,
            id: id,
            logger: logger
        )
        let kept = state.withLock { s -> Bool in
            guard !s.closed else { return false }
            s.connection = c
            return true
        }
        guard kept else {
            try? await c.close()
            throw Closed()
        }
        return c
    }

    private func acquire() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                guard s.busy else {
                    s.busy = true
                    return true
                }
                s.waiting.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    /// Hands the lane to the next unit of work waiting, if any (it stays busy).
    private func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard !s.waiting.isEmpty else {
                s.busy = false
                return nil
            }
            return s.waiting.removeFirst()
        }
        next?.resume()
    }

    /// Ends the lane: the connection closes (a statement in flight fails) and no new one opens.
    func close() async {
        let c = state.withLock { s in
            s.closed = true
            defer { s.connection = nil }
            return s.connection
        }
        try? await c?.close()
    }
}

/// The lanes of a PostgreSQL server: one for send batches, `PostgresSessionReads.laneCount` for session
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
    /// TCP keepalives from the PostgreSQL server on every connection (lanes and pool): a client gone
    /// without a FIN is dropped by the server in about a minute instead of holding its locks for hours.
    static let keepaliveSettings = [
        ("tcp_keepalives_idle", "30"), ("tcp_keepalives_interval", "10"), ("tcp_keepalives_count", "3"),
    ]

    /// The server gives up on a lane's statement before the lane's deadline does (milliseconds): a
    /// statement waiting on another transaction's lock ends cleanly, instead of leaving a backend that
    /// waits on after the lane closed its connection (and piles up with each reconnect).
    static let timeoutSettings = [("lock_timeout", "5000"), ("statement_timeout", "8000")]

    static let plannerSettings = [
        ("plan_cache_mode", "force_generic_plan"), ("enable_seqscan", "off"),
        ("enable_hashjoin", "off"), ("enable_mergejoin", "off"),
    ]

    init(configuration base: PostgresConnection.Configuration, logger: Logger) {
        var configuration = base
        configuration.options.additionalStartupParameters.removeAll { name, _ in
            Self.plannerSettings.contains { $0.0 == name }
        }
        configuration.options.additionalStartupParameters +=
            Self.plannerSettings + Self.keepaliveSettings + Self.timeoutSettings
        let loops = 1 + PostgresSessionReads.laneCount
        group = MultiThreadedEventLoopGroup(numberOfThreads: loops)
        let threads = Array(group.makeIterator())
        send = PostgresLane(loop: threads[0], configuration: configuration, id: 0, logger: logger)
        sessions = (1..<loops).map {
            PostgresLane(loop: threads[$0], configuration: configuration, id: $0, logger: logger)
        }
    }

    func close() async {
        await send.close()
        for lane in sessions { await lane.close() }
        try? await group.shutdownGracefully()
    }
}
