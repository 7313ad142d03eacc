import Foundation
import Synchronization

/// This node's side of the push channel: which devices hold a connection here, and which long polls
/// wait. Signals from the bus (this node's or another's) are applied here; connections and waiters are
/// only ever reached through it.
final class PushHub: Sendable {
    private struct State {
        var byDevice: [String: PushConnection] = [:]
        var devicesOf: [String: Set<String>] = [:]
        /// Long polls, each woken by any of its keys (`waiterKeys`), and the polls waiting on each key.
        var waiters: [UInt64: (keys: [String], state: Waiter)] = [:]
        var waiterKeys: [String: Set<UInt64>] = [:]
        var nextWaiter: UInt64 = 0
        var closed = false
    }
    /// A long poll: registered before its read, so a signal between the read and the wait is kept.
    private enum Waiter {
        case registered, signalled
        case waiting(CheckedContinuation<Void, Never>)
    }
    private let state = Mutex(State())
    let metrics = PushMetrics()

    // MARK: Signals

    func apply(_ signal: PushSignal) {
        switch signal {
        case .due(let accounts):
            metrics.dueSignals.increment()
            var wake: [PushConnection] = []
            var resume: [CheckedContinuation<Void, Never>] = []
            state.withLock { s in
                for account in accounts {
                    for device in s.devicesOf[account] ?? [] { if let c = s.byDevice[device] { wake.append(c) } }
                    resume += Self.signal(key: account, in: &s)
                }
            }
            wake.forEach { $0.due() }
            resume.forEach { $0.resume() }
        case .transaction(let id):
            state.withLock { Self.signal(key: Self.transactionKey(id), in: &$0) }.forEach { $0.resume() }
        case .authCode(let hash):
            state.withLock { Self.signal(key: Self.authCodeKey(hash), in: &$0) }.forEach { $0.resume() }
        case .ended(let ending):
            // Connections close (4403); long polls held for the session wake up and find it gone (401).
            let (victims, resume) = state.withLock { s -> ([PushConnection], [CheckedContinuation<Void, Never>]) in
                switch ending {
                case .account(let id):
                    return ((s.devicesOf[id] ?? []).compactMap { s.byDevice[$0] }, Self.signal(key: id, in: &s))
                case .device(let id):
                    return (s.byDevice[id].map { [$0] } ?? [], Self.signal(key: Self.deviceKey(id), in: &s))
                case .deviceSession(let hash):
                    return (
                        s.byDevice.values.filter { $0.sessionHash == hash },
                        Self.signal(key: Self.sessionKey(hash), in: &s)
                    )
                case .otherDeviceSessions(let device, let keeping):
                    // The device's long polls all wake; the one on the kept session reads it again and waits on.
                    return (
                        s.byDevice[device].map { $0.sessionHash == keeping ? [] : [$0] } ?? [],
                        Self.signal(key: Self.deviceKey(device), in: &s)
                    )
                }
            }
            victims.forEach { $0.close(.revoked) }
            resume.forEach { $0.resume() }
        case .challenge(let devices):
            state.withLock { s in devices.compactMap { s.byDevice[$0] } }.forEach { $0.challenged() }
        case .connected(let device, let connection):
            let old = state.withLock { s -> PushConnection? in
                guard let c = s.byDevice[device], c.id != connection else { return nil }
                return c
            }
            old?.close(.replaced)
        }
    }

    /// Marks every long poll waiting on `key` as signalled; returns the continuations to resume (outside the lock).
    private static func signal(key: String, in s: inout State) -> [CheckedContinuation<Void, Never>] {
        var resume: [CheckedContinuation<Void, Never>] = []
        for id in s.waiterKeys[key] ?? [] {
            guard let w = s.waiters[id] else { continue }
            if case .waiting(let c) = w.state {
                resume.append(c)
                remove(id, in: &s)
            } else {
                s.waiters[id]!.state = .signalled
            }
        }
        return resume
    }

    private static func remove(_ id: UInt64, in s: inout State) {
        guard let w = s.waiters.removeValue(forKey: id) else { return }
        for key in w.keys {
            s.waiterKeys[key]?.remove(id)
            if s.waiterKeys[key]?.isEmpty == true { s.waiterKeys[key] = nil }
        }
    }

    /// Waiter keys: an account ID (something became due for it, or all its sessions ended) needs no
    /// prefix, as account IDs never contain `:`; an MFA transaction's and an authentication code's long
    /// polls; a device's and a device
    /// session's (revoked, signed out, ended by a key rotation).
    static func transactionKey(_ id: String) -> String { "t:" + id }
    static func authCodeKey(_ hash: String) -> String { "q:" + hash }
    static func deviceKey(_ id: String) -> String { "d:" + id }
    static func sessionKey(_ hash: String) -> String { "s:" + hash }

    /// Everything local looks at its queue again (after a lost LISTEN connection).
    func resync() {
        let (all, resume) = state.withLock { s -> ([PushConnection], [CheckedContinuation<Void, Never>]) in
            let resume = Array(s.waiterKeys.keys).flatMap { Self.signal(key: $0, in: &s) }
            return (Array(s.byDevice.values), resume)
        }
        all.forEach { $0.due() }
        resume.forEach { $0.resume() }
    }

    // MARK: Connections

    /// Registers an authenticated connection; returns false when the node is shutting down. A local
    /// connection of the same device is closed here; other nodes' by the `connected` signal.
    func attach(_ c: PushConnection) -> Bool {
        let (ok, old) = state.withLock { s -> (Bool, PushConnection?) in
            guard !s.closed else { return (false, nil) }
            let old = s.byDevice.updateValue(c, forKey: c.deviceID)
            s.devicesOf[c.accountID, default: []].insert(c.deviceID)
            return (true, old)
        }
        if ok, old == nil { metrics.connections.increment() }
        old?.close(.replaced)
        return ok
    }

    /// False when it was not attached, or another connection of its device has replaced it.
    @discardableResult
    func detach(_ c: PushConnection) -> Bool {
        let removed = state.withLock { s -> Bool in
            guard s.byDevice[c.deviceID] === c else { return false }
            s.byDevice[c.deviceID] = nil
            s.devicesOf[c.accountID]?.remove(c.deviceID)
            if s.devicesOf[c.accountID]?.isEmpty == true { s.devicesOf[c.accountID] = nil }
            return true
        }
        if removed { metrics.connections.decrement() }
        return removed
    }

    var connectionCount: Int { state.withLock { $0.byDevice.count } }

    /// Whether `c` is still its device's connection here.
    func holds(_ c: PushConnection) -> Bool { state.withLock { $0.byDevice[c.deviceID] === c } }

    /// Shutting down: long polls answer what they have instead of waiting (a wait would return at once).
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Shutdown: new connections are refused and every open one is closed with 1001 (reconnect later).
    func closeAll() {
        let (all, resume) = state.withLock { s -> ([PushConnection], [CheckedContinuation<Void, Never>]) in
            s.closed = true
            // Long polls answer what they have now rather than hold the shutdown for their wait.
            let resume = Array(s.waiterKeys.keys).flatMap { Self.signal(key: $0, in: &s) }
            return (Array(s.byDevice.values), resume)
        }
        all.forEach { $0.close(.goingAway) }
        resume.forEach { $0.resume() }
    }

    // MARK: Long polls

    /// Step one of a long poll, before the caller reads the queue (or the transaction): registers a
    /// waiter woken by a signal on any of `keys`.
    func register(_ keys: String...) -> UInt64 { register(keys: keys) }

    func register(keys: [String]) -> UInt64 {
        state.withLock { s in
            s.nextWaiter += 1
            s.waiters[s.nextWaiter] = (keys, .registered)
            for key in keys { s.waiterKeys[key, default: []].insert(s.nextWaiter) }
            return s.nextWaiter
        }
    }

    /// Step two, when the read found nothing: returns when one of the waiter's keys was signalled since
    /// `register`, or after `seconds`, or at shutdown.
    func wait(_ id: UInt64, seconds: Double) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let waiting = state.withLock { s -> Bool in
                guard !s.closed, let w = s.waiters[id], case .registered = w.state else { return false }
                s.waiters[id]!.state = .waiting(c)
                return true
            }
            guard waiting else {
                c.resume()
                cancel(id)
                return
            }
            Task {
                try? await Task.sleep(for: .seconds(seconds))
                let c = self.state.withLock { s -> CheckedContinuation<Void, Never>? in
                    guard let w = s.waiters[id], case .waiting(let c) = w.state else { return nil }
                    Self.remove(id, in: &s)
                    return c
                }
                c?.resume()
            }
        }
    }

    /// Drops a registration whose read found something (or whose wait is over).
    /// How many long polls wait on `key` now.
    func waiters(on key: String) -> Int { state.withLock { $0.waiterKeys[key]?.count ?? 0 } }

    func cancel(_ id: UInt64) {
        state.withLock { Self.remove(id, in: &$0) }
    }
}
