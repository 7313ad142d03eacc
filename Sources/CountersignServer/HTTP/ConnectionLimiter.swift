import NIOCore
import Synchronization

/// Open connections per client address (IPv6 per /64), capped: a client that opens connections and
/// sends slowly, or not at all, holds at most `limit` of them. An authenticated push connection leaves
/// the count (it is bound to one device, and one device has one), so a household or office behind one
/// address is limited only in connections that have not shown a credential.
///
/// A trusted proxy's connections are not capped: every client behind it shares its address, and the
/// proxy limits its clients' connections itself.
final class ConnectionLimiter: Sendable {
    let limit: Int
    let exempt: TrustedProxies
    private let open = Mutex<[String: Int]>([:])

    init(limit: Int, exempt: TrustedProxies = TrustedProxies()) {
        self.limit = limit
        self.exempt = exempt
    }

    /// Counts a new connection from `address`; false (counting nothing) when the address is at the cap.
    func admit(_ address: String) -> Bool {
        let key = AddressThrottle.key(address)
        return open.withLock { open in
            let n = open[key, default: 0]
            guard n < limit else { return false }
            open[key] = n + 1
            return true
        }
    }

    func release(_ address: String) {
        let key = AddressThrottle.key(address)
        open.withLock { open in
            let n = open[key, default: 0]
            if n <= 1 { open[key] = nil } else { open[key] = n - 1 }
        }
    }

    /// Applies the cap to a new channel: closed at once when over it, counted until it closes (or, for
    /// a push connection, until it authenticates: `ConnectionLimiter.Slot.release()`).
    func admit(_ channel: any Channel) -> Slot? {
        guard let address = channel.remoteAddress?.ipAddress, !exempt.contains(ClientAddress.normalize(address))
        else { return Slot(limiter: nil, address: "") }
        guard admit(address) else { return nil }
        let slot = Slot(limiter: self, address: address)
        channel.closeFuture.whenComplete { _ in slot.release() }
        return slot
    }

    /// One counted connection; released once, whichever comes first.
    final class Slot: Sendable {
        private let limiter: ConnectionLimiter?
        private let address: String
        private let released = Mutex(false)
        init(limiter: ConnectionLimiter?, address: String) {
            self.limiter = limiter
            self.address = address
        }
        func release() {
            guard
                released.withLock({ r in
                    defer { r = true }
                    return !r
                })
            else { return }
            limiter?.release(address)
        }
    }
}
