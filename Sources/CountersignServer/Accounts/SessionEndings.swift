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

/// The second-factor step of sign-in, set by the MFA service: after a correct password, it either lets
/// the session start (nil) or opens a transaction the client must finish.
final class SecondFactorGate: Sendable {
    /// The account, who asks, when, for a re-authentication the session's token hash (nil: a sign-in), and
    /// whether pushes are wanted (false: the client will give a code).
    typealias Begin = @Sendable (AccountRecord, RequestOrigin, Date, String?, Bool) async throws -> MFARequired?
    private let handler = CallbackSlot<Begin>()

    func set(_ begin: @escaping Begin) { handler.set(begin) }

    func begin(
        _ account: AccountRecord,
        _ origin: RequestOrigin,
        _ now: Date,
        reauthenticating session: String? = nil,
        offerPush: Bool = true
    ) async throws -> MFARequired? {
        guard let begin = handler.current else { return nil }
        return try await begin(account, origin, now, session, offerPush)
    }
}
