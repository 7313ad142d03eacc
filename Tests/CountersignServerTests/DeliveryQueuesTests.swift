import Synchronization
import Testing

@testable import CountersignServer

/// The push queues (docs/PROTOCOL.md §2.2): each job is posted by its own closure whichever worker takes it,
/// and the bounds hold.
@Suite struct DeliveryQueuesTests {
    final class Posted: Sendable {
        let pairs = Mutex<[(job: Int, by: Int)]>([])
    }

    @Test func everyJobIsPostedByItsOwnClosureWhicheverWorkerTakesIt() async throws {
        let background = BackgroundWork()
        let queues = DeliveryQueues<Int>(
            capacity: 1024,
            totalCapacity: 4096,
            maxServices: 4,
            inFlight: 3,
            background: background
        ) {}
        let posted = Posted()
        // Many jobs of one service at once, queued before any worker runs: three workers drain them, each posting
        // jobs it did not start with.
        for i in 0..<90 {
            let outcome = queues.enqueue(i, service: "https://push.example.net") { job in
                posted.pairs.withLock { $0.append((job, i)) }
            }
            #expect(outcome == .queued)
        }
        // drain() cancels queue work: wait for the posts first.
        try await eventually {
            posted.pairs.withLock { $0.count } == 90 && queues.queued == 0 && queues.services == 0
        }
        await background.drain()
        let pairs = posted.pairs.withLock { $0 }
        #expect(pairs.count == 90)
        #expect(pairs.allSatisfy { $0.job == $0.by }, "a job posted by another job's closure")
        #expect(queues.queued == 0 && queues.services == 0)
    }

    @Test func whatDoesNotFitIsDroppedPerServiceAndByServiceCount() async throws {
        let background = BackgroundWork()
        let queues = DeliveryQueues<Int>(
            capacity: 2,
            totalCapacity: 100,
            maxServices: 2,
            inFlight: 1,
            background: background
        ) {}
        let gate = Gate()
        let post: @Sendable (Int) async -> Void = { _ in await gate.wait() }
        // The worker holds the job it took until the gate opens: two more wait, whether or not it took the
        // first yet; the fourth cannot fit.
        let outcomes = (0..<4).map { queues.enqueue($0, service: "a", send: post) }
        #expect(outcomes[3] == .dropped && outcomes[0] == .queued && outcomes[1] == .queued)
        #expect(queues.enqueue(10, service: "b", send: post) == .queued)
        #expect(queues.enqueue(11, service: "c", send: post) == .dropped, "at most 2 services at once")
        gate.open()
        try await eventually { queues.queued == 0 && queues.services == 0 }
        await background.drain()
    }
}

/// Waits until `done` holds, for up to 120 seconds: a loaded machine running every suite at once schedules the
/// workers late (a CI run once took over 30 s for a few hundred).
func eventually(_ done: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(120)
    while !done() {
        guard ContinuousClock.now < deadline else {
            Issue.record("not reached within 120 s")
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// Holds its waiters until opened.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { c in
            let resume = state.withLock { s -> Bool in
                if s.open { return true }
                s.waiters.append(c)
                return false
            }
            if resume { c.resume() }
        }
    }

    func open() {
        for c in state.withLock({ s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }) { c.resume() }
    }
}
