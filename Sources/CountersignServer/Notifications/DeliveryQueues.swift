import Synchronization

/// Pushes waiting to be posted, one bounded queue per push service (a Web Push origin, an APNs environment),
/// each posted by at most `inFlight` tasks at a time, so a slow or hanging service delays only its own pushes.
/// Everything is bounded, whoever chooses the services: jobs per service, jobs in all, and services at once (a
/// service whose queue empties is forgotten, and its tasks end). What does not fit is dropped, and the caller
/// counts it. The tasks are the server's background work: stopping the server cancels them, and what still
/// waits is not sent.
final class DeliveryQueues<Job: Sendable>: Sendable {
    enum Outcome { case queued, dropped }

    /// A job with the closure that posts it: each job keeps its own, since a worker posts whatever job of its
    /// service comes next (one worker using its first job's closure for the rest sent them to that job's address).
    private struct Entry {
        let job: Job
        let send: @Sendable (Job) async -> Void
    }

    private struct Queue {
        var jobs: [Entry] = []
        var head = 0
        var running = 0
        var count: Int { jobs.count - head }

        mutating func pop() -> Entry? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            head += 1
            // Compacted now and then, not at each pop: a pop stays cheap however long the queue.
            if head >= 1024 && head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    let capacity: Int
    let totalCapacity: Int
    let maxServices: Int
    let inFlight: Int
    let background: BackgroundWork
    /// Told whenever a worker takes a job (the queued gauge).
    let onTaken: @Sendable () -> Void
    private let state = Mutex<(queues: [String: Queue], queued: Int)>(([:], 0))

    init(
        capacity: Int,
        totalCapacity: Int,
        maxServices: Int,
        inFlight: Int,
        background: BackgroundWork,
        onTaken: @escaping @Sendable () -> Void
    ) {
        self.capacity = capacity
        self.totalCapacity = totalCapacity
        self.maxServices = maxServices
        self.inFlight = inFlight
        self.background = background
        self.onTaken = onTaken
    }

    /// Queues `job` for `service`, posted by `send` (this job's own); a new task starts when fewer than `inFlight` run for it.
    func enqueue(_ job: Job, service: String, send: @escaping @Sendable (Job) async -> Void) -> Outcome {
        let start = state.withLock { s -> Bool? in
            guard s.queued < totalCapacity else { return nil }
            guard var queue = s.queues[service] ?? (s.queues.count < maxServices ? Queue() : nil),
                queue.count < capacity
            else { return nil }
            queue.jobs.append(Entry(job: job, send: send))
            s.queued += 1
            let start = queue.running < inFlight
            if start { queue.running += 1 }
            s.queues[service] = queue
            return start
        }
        guard let start else { return .dropped }
        if start { background.run(cancellable: true) { [self] in await drain(service) } }
        return .queued
    }

    /// Runs `body` after `wait` (a retry), without holding a post's place meanwhile.
    func later(_ wait: Duration, _ body: @escaping @Sendable () -> Void) {
        background.run(cancellable: true) {
            try? await Task.sleep(for: wait)
            if Task.isCancelled { return }
            body()
        }
    }

    /// Jobs waiting, over every service.
    var queued: Int { state.withLock { $0.queued } }
    var services: Int { state.withLock { $0.queues.count } }

    private func drain(_ service: String) async {
        while !Task.isCancelled {
            let entry = state.withLock { s -> Entry? in
                guard var queue = s.queues[service] else { return nil }
                guard let job = queue.pop() else {
                    queue.running -= 1
                    s.queues[service] = queue.running == 0 ? nil : queue
                    return nil
                }
                s.queued -= 1
                s.queues[service] = queue
                return job
            }
            guard let entry else { return }
            onTaken()
            await entry.send(entry.job)
        }
    }
}
