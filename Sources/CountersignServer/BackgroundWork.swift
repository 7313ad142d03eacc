import Foundation
import Synchronization

/// Work a request starts and does not wait for (the revocations after an account's sessions end, back-channel
/// logout), tracked so that whoever closes the storage first waits for it (`drain`): work that ran on after
/// the storage closed would use connection pools already shut down. Revocations are waited for to the end;
/// back-channel deliveries still waiting to try again are cancelled (`cancellable`).
package final class BackgroundWork: Sendable {
    private struct Entry {
        let task: Task<Void, Never>
        let cancellable: Bool
    }
    private let running = Mutex<[UInt64: Entry]>([:])
    private let next = Atomic<UInt64>(0)

    package init() {}

    /// Starts `operation` now, tracked until it returns.
    func run(cancellable: Bool = false, _ operation: @escaping @Sendable () async -> Void) {
        let id = next.add(1, ordering: .relaxed).newValue
        running.withLock { r in
            r[id] = Entry(
                task: Task { [weak self] in
                    await operation()
                    self?.running.withLock { _ = $0.removeValue(forKey: id) }
                },
                cancellable: cancellable
            )
        }
    }

    /// Cancels the cancellable work and waits for all of it.
    package func drain() async {
        while true {
            let entries = running.withLock { Array($0.values) }
            if entries.isEmpty { return }
            for e in entries where e.cancellable { e.task.cancel() }
            for e in entries { await e.task.value }
        }
    }
}
