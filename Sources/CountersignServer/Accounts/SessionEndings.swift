import CountersignAPI
import Foundation
import Synchronization

/// What ended: every session of an account (sign-out-everywhere, password change, lock), one device
/// (revoked), or one device session (signed out, expired).
public enum SessionEnding: Sendable, Equatable {
    case account(String)
    case device(String)
    case deviceSession(tokenHash: String)
    /// Every session of the device but one (its keys were rotated from that one).
    case otherDeviceSessions(deviceID: String, keeping: String)
}

/// Tells whoever holds something open on a session's behalf (the push channel's connections) that the
/// session ended, the moment the database says so, so that nothing keeps flowing to a revoked device.
public final class SessionEndings: Sendable {
    private let observers = Mutex<[@Sendable (SessionEnding) -> Void]>([])

    public init() {}

    public func observe(_ observer: @escaping @Sendable (SessionEnding) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    func ended(_ ending: SessionEnding) {
        for observer in observers.withLock({ $0 }) { observer(ending) }
    }
}
