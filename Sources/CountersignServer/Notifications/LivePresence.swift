import Foundation
import Logging
import Synchronization

/// Which devices someone is looking at through a live connection (docs/PROTOCOL.md §2.2): their events arrive
/// over it, so they get no push notification. The mark is kept on the device's push target in the database,
/// so that the node that commits an event knows of connections held by every node: set `markFor` ahead when a
/// device connects here or says it is shown again, renewed every `renewEvery` while it stays so, cleared when
/// it closes or says it is hidden. A node that stops without clearing leaves marks that run out by themselves.
/// Changes are written in batches, one writer at a time: a thousand connections arriving at once cost a few
/// statements, not a thousand.
final class LivePresence: Sendable {
    static let markFor: TimeInterval = 150
    static let renewEvery: Duration = .seconds(60)
    static let batch = 500

    private struct State {
        /// Seen here now.
        var seen: Set<String> = []
        /// To write: marked, and cleared.
        var mark: Set<String> = []
        var clear: Set<String> = []
        var writing = false
        var renewing = false
    }

    let store: any NotificationStore
    let background: BackgroundWork
    let clock: any WallClock
    let logger: Logger
    private let state = Mutex(State())

    init(store: any NotificationStore, background: BackgroundWork, clock: any WallClock, logger: Logger) {
        self.store = store
        self.background = background
        self.clock = clock
        self.logger = logger
    }

    /// The device's connection here is seen now, or no longer.
    func changed(_ deviceID: String, seen: Bool) {
        let (write, renew) = state.withLock { s -> (Bool, Bool) in
            if seen {
                s.seen.insert(deviceID)
                s.mark.insert(deviceID)
                s.clear.remove(deviceID)
            } else {
                s.seen.remove(deviceID)
                s.clear.insert(deviceID)
                s.mark.remove(deviceID)
            }
            let write = !s.writing
            s.writing = true
            let renew = !s.renewing && !s.seen.isEmpty
            if renew { s.renewing = true }
            return (write, renew)
        }
        if write { background.run { [self] in await self.write() } }
        if renew { background.run(cancellable: true) { [self] in await self.renew() } }
    }

    /// Whether the device is seen through a connection to this node (a target it registers now is marked).
    func isSeen(_ deviceID: String) -> Bool { state.withLock { $0.seen.contains(deviceID) } }

    private func write() async {
        while true {
            let (mark, clear) = state.withLock { s -> ([String], [String]) in
                defer {
                    s.mark.removeAll()
                    s.clear.removeAll()
                }
                if s.mark.isEmpty && s.clear.isEmpty { s.writing = false }
                return (Array(s.mark), Array(s.clear))
            }
            if mark.isEmpty && clear.isEmpty { return }
            let until = clock.now().addingTimeInterval(Self.markFor)
            do {
                for part in stride(from: 0, to: mark.count, by: Self.batch) {
                    try await store.setLive(
                        deviceIDs: Array(mark[part..<min(mark.count, part + Self.batch)]),
                        until: until
                    )
                }
                for part in stride(from: 0, to: clear.count, by: Self.batch) {
                    try await store.setLive(
                        deviceIDs: Array(clear[part..<min(clear.count, part + Self.batch)]),
                        until: nil
                    )
                }
            } catch {
                // Pushes go to these devices meanwhile (a duplicate at worst), or stop until the mark runs out.
                logger.warning("which devices are connected could not be written: \(type(of: error))")
            }
        }
    }

    /// Renews the marks of every device seen here while any is.
    private func renew() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.renewEvery)
            if Task.isCancelled { return }
            let write = state.withLock { s -> Bool? in
                if s.seen.isEmpty {
                    s.renewing = false
                    return nil
                }
                s.mark.formUnion(s.seen)
                let write = !s.writing
                s.writing = true
                return write
            }
            guard let write else { return }
            if write { background.run { [self] in await self.write() } }
        }
    }
}
