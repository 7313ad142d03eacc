import NIOCore

/// Runs a task's jobs on one event loop's thread. A drain that prefers it runs its PostgresNIO statements
/// on the thread their connection reads on, so each answer resumes the drain in the same loop tick: no
/// handoff to the cooperative pool and back per statement (measured: each such handoff cost a few
/// hundred microseconds of scheduling delay on a loaded two-core host).
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
