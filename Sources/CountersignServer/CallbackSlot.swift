import Foundation

/// A callback set at startup and called from any thread. Not a `Mutex<closure?>`: reading a closure out
/// of a generic container with `withLock { $0 }` writes the inout value back through a reabstraction
/// thunk, so each read wrapped the stored closure once more, and every call walked the whole chain.
/// Measured on the send path (one read per send): 18% of all CPU in bench-push.sh after 10,000 sends,
/// and growing with each one.
final class CallbackSlot<F>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: F?

    init() {}

    func set(_ callback: F?) {
        lock.lock()
        value = callback
        lock.unlock()
    }

    var current: F? {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
