/// Carries push signals to every node, this one included. On SQLite (one process) that is a function
/// call; on PostgreSQL it is NOTIFY/LISTEN (`PostgresPushBus`), the only broker several nodes share.
package protocol PushBus: Sendable {
    /// Delivers `signal` to `deliver` on every node, this one at once.
    func publish(_ signal: PushSignal)
    /// Runs until cancelled, handing every signal from other nodes to `deliver`; `resync` is called
    /// whenever signals may have been missed (a lost LISTEN connection), so that local state is checked.
    func run(deliver: @escaping @Sendable (PushSignal) -> Void, resync: @escaping @Sendable () -> Void) async throws
}

/// One process: a signal is applied where it is published.
final class LocalPushBus: PushBus {
    private let deliver: @Sendable (PushSignal) -> Void
    init(deliver: @escaping @Sendable (PushSignal) -> Void) { self.deliver = deliver }
    package func publish(_ signal: PushSignal) { deliver(signal) }
    package func run(
        deliver: @escaping @Sendable (PushSignal) -> Void,
        resync: @escaping @Sendable () -> Void
    ) async throws {}
}
