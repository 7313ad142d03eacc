import Foundation
import Synchronization

/// The time every security decision uses (lockout, session expiry, captcha expiry). Passed in so tests
/// move time instead of sleeping.
public protocol WallClock: Sendable {
    func now() -> Date
}

public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that only moves when told to.
public final class ManualClock: WallClock {
    private let current: Mutex<Date>
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = Mutex(start) }
    public func now() -> Date { current.withLock { $0 } }
    public func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}
