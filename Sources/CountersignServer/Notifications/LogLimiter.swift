import Synchronization

/// A warning about one push service said at most once a minute: the endpoints are the subscribers' choice, and
/// their failures must not flood the log.
final class LogLimiter: Sendable {
    private let said = Mutex<[String: ContinuousClock.Instant]>([:])

    func allows(_ key: String) -> Bool {
        let now = ContinuousClock.now
        return said.withLock { said in
            if let last = said[key], now - last < .seconds(60) { return false }
            if said.count >= 1024 { said.removeAll() }
            said[key] = now
            return true
        }
    }
}
