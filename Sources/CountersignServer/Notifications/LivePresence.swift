import Foundation
import Logging
import Synchronization

/// Which devices someone is looking at through a live connection (docs/PROTOCOL.md §2.2): their events arrive
/// over it, so they get no push notification. The mark is kept on the device's push target in the database, so
/// that the node that commits an event knows of connections held by every node: set `markFor` ahead when a
/// device connects here or says it is shown again, renewed every `renewEvery` while it stays so, cleared when it
/// closes or says it is hidden. Each mark names the node that made it and only that node clears it: a device that
/// reconnects to another node keeps the new node's mark when the old one lets go. A node that stops clears its
/// own; one that dies leaves marks that run out by themselves. Changes are written in batches, at most one pass
/// a second, so a thousand connections arriving at once, or a client toggling its visibility in a loop, cost a
/// few statements.
final class LivePresence: Sendable {
    static let markFor: TimeInterval = 150
    static let renewEvery: Duration = .seconds(60)
    static let batch = 500
    /// Between two writing passes, and after a failed one.
    static let pause: Duration = .seconds(1)
    static let pauseAfterFailure: Duration = .seconds(5)

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
    /// This node, as its marks name it.
    let node: String
    private let state = Mutex(State())

    init(store: any NotificationStore, background: BackgroundWork, clock: any WallClock, logger: Logger, node: String) {
        self.store = store
        self.background = background
        self.clock = clock
        self.logger = logger
        self.node = node
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

    /// Whether the device is seen through a connection to this node.
    func isSeen(_ deviceID: String) -> Bool { state.withLock { $0.seen.contains(deviceID) } }

    /// Shutting down: this node's marks are cleared in one statement (its connections close after).
    func clearAll() async {
        state.withLock { s in
            s.seen.removeAll()
            s.mark.removeAll()
        }
        do { try await store.clearLive(by: node) } catch {
            logger.warning("this node's connected devices could not be cleared: \(type(of: error)); they run out")
        }
    }

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
                    let ids = Array(mark[part..<min(mark.count, part + Self.batch)])
                    try await store.setLive(deviceIDs: ids, until: until, by: node)
                }
                for part in stride(from: 0, to: clear.count, by: Self.batch) {
                    let ids = Array(clear[part..<min(clear.count, part + Self.batch)])
                    try await store.setLive(deviceIDs: ids, until: nil, by: node)
                }
                try? await Task.sleep(for: Self.pause)
            } catch {
                // Tried again, but only what no later change replaced: a mark while still seen, a clear while not.
                logger.warning("which devices are connected could not be written: \(type(of: error))")
                state.withLock { s in
                    s.mark.formUnion(mark.filter { s.seen.contains($0) && !s.clear.contains($0) })
                    s.clear.formUnion(clear.filter { !s.seen.contains($0) && !s.mark.contains($0) })
                }
                try? await Task.sleep(for: Self.pauseAfterFailure)
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
