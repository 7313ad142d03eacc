import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// scripts/bench-notify.sh's load (docs/BENCHMARKS.md#bench-notify). The devices of `setup` are split in
/// two: the second half registers Web Push subscriptions whose keys this process made, pointing at
/// `PushReceiver`; the first half has none. Then, over keep-alive HTTP/1.1:
/// 1. the raw cost of one notification in this process on all cores (the peer): a fresh key, ECDH, HKDF and
///    AES-GCM (`WebPushMessage.seal`, what the server runs per push), the VAPID header cached as the server
///    caches it; one ES256 signature's rate beside it, for a push service seen for the first time in an hour;
/// 2. NOTIFICATIONS messages to the subscribed devices at RATE per second, each timed from just before its
///    POST is written (the commit comes later, so this bounds commit→receipt from above) to its push's last
///    byte at the receiver; every body is opened afterwards and matched to its message by the id inside;
/// 3. sends as fast as 64 in flight allow: to devices without a subscription, to subscribed ones, and again
///    without (the mean of the two is the peer);
/// 4. password sign-ins, 8 in flight: alone, beside BACKGROUND messages per second to devices without a
///    subscription, and beside as many to subscribed ones (a push each): the last two's ratio is the pushes' cost.
/// The last line is the summary the script prints last.
struct NotifyRun {
    let host: String
    let port: Int
    let serverPID: Int32
    let dir: URL
    let notifications: Int
    let rate: Double
    /// Paced sends compared with and without a push each, below saturation.
    let compareRate: Double
    let background: Double
    let signInSeconds: Double
    let metricsToken: String?

    static let httpConnections = 32
    static let window = 64
    static let signInWindow = 8
    static let settleSeconds: UInt64 = 15

    func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    struct Subscriber: Sendable {
        let key: P256.KeyAgreement.PrivateKey
        let auth: [UInt8]
    }

    func run() async throws {
        let devices = try Run.loadDevices(dir: dir)
        let senders = try Run.loadSenders(dir: dir)
        guard devices.count >= 4 else { throw PushFailure(description: "setup made fewer than 4 devices") }
        let plain = Array(devices.prefix(devices.count / 2))
        let subscribed = Array(devices.dropFirst(devices.count / 2))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        let receiver = try await PushReceiver.start(group: group)
        let hostHeader = "\(host):\(port)"
        let pool = HTTPPool(group: group, host: host, port: port, size: Self.httpConnections)
        try await pool.open()
        say(
            "generator: \(plain.count) devices without a subscription, \(subscribed.count) with, \(senders.count) senders, "
                + "push service 127.0.0.1:\(receiver.port), \(System.coreCount) cores"
        )

        // 1. The peer, measured before the server has work.
        let raw = await Self.rawSeal(seconds: 3)
        let signatures = await Self.rawSignatures(seconds: 1)
        say(
            String(
                format: "raw, in this process on %d cores: %.0f notifications/s (%.1f µs each on one core); "
                    + "ES256 %.0f signatures/s (one per push service an hour)",
                raw.workers,
                raw.perSecond,
                1e6 * Double(raw.workers) / raw.perSecond,
                signatures
            )
        )

        // The subscriptions, through the API.
        var subscribers = [Int: Subscriber]()
        let subscribeStart = ContinuousClock.now
        try await withThrowingTaskGroup(of: (Int, Subscriber).self) { tasks in
            for (n, d) in subscribed.enumerated() {
                if n >= Self.window { if let (i, s) = try await tasks.next() { subscribers[i] = s } }
                tasks.addTask {
                    let s = Subscriber(
                        key: P256.KeyAgreement.PrivateKey(),
                        auth: (0..<16).map { _ in .random(in: 0...255) }
                    )
                    let body = try JSONEncoder().encode(
                        WebPushSubscription(
                            endpoint: "http://127.0.0.1:\(receiver.port)/push/\(d.index)",
                            keys: .init(
                                p256dh: Base64URL(Array(s.key.publicKey.x963Representation)).text,
                                auth: Base64URL(s.auth).text
                            )
                        )
                    )
                    let reply = try await pool.send(
                        HTTPRequest(
                            method: .PUT,
                            path: "/v1/devices/current/push-subscription",
                            host: hostHeader,
                            token: d.token,
                            json: ByteBuffer(bytes: body)
                        )
                    ).get()
                    guard reply.status == 200 else {
                        throw PushFailure(
                            description: "a subscription was answered \(reply.status): \(String(buffer: reply.body))"
                        )
                    }
                    return (d.index, s)
                }
            }
            for try await (i, s) in tasks { subscribers[i] = s }
        }
        say("subscribed \(subscribers.count) devices in \(secs(ContinuousClock.now - subscribeStart)) s")

        // Warm both paths (and the push service's connections) before anything is timed.
        /// `count` envelopes, each to one of `to` at random, from the senders in turn, as ready requests.
        func sealed(_ count: Int, to: [Device]) async throws -> [Run.Sealed] {
            try await Run.seal(
                count: count,
                targets: (0..<count).map { _ in to.randomElement()!.index },
                devices: devices,
                senders: senders,
                hostHeader: hostHeader
            )
        }
        let warm = try await Run.seal(
            count: 200,
            targets: (0..<200).map { subscribed[$0 % subscribed.count].index },
            devices: devices,
            senders: senders,
            hostHeader: hostHeader
        )
        _ = await issue(warm.map(\.request), pool: pool, rate: nil, window: Self.window)
        await settle(receiver, expecting: warm.count)
        _ = receiver.take()

        // 2. Paced: send→receipt.
        let paced = try await sealed(notifications, to: subscribed)
        say(String(format: "sealed %d envelopes; sending them at %.0f/s", paced.count, rate))
        let pacedTimes = await issue(paced.map(\.request), pool: pool, rate: rate, window: 4 * Self.window)
        await settle(receiver, expecting: notifications)
        let pacedReport = report(paced, pacedTimes, receiver.take(), subscribers, label: "paced")

        // 2b. Below saturation: the same paced sends' own answers, with a push each and without.
        func pacedAnswers(_ to: [Device], label: String) async throws -> (p50: Double, p99: Double) {
            let count = Int(compareRate * 5)
            let batch = try await sealed(count, to: to)
            let times = await issue(batch.map(\.request), pool: pool, rate: compareRate, window: 4 * Self.window)
            if to.first?.index == subscribed.first?.index { await settle(receiver, expecting: count) }
            _ = receiver.take()
            let answers = times.answerMilliseconds()
            say(
                String(
                    format: "%@ at %.0f/s: POST answer ms p50 %.2f, p99 %.2f (%@)",
                    label,
                    compareRate,
                    pct(answers, 50),
                    pct(answers, 99),
                    times.statusSummary()
                )
            )
            return (pct(answers, 50), pct(answers, 99))
        }
        let answersWithout = try await pacedAnswers(plain, label: "sends without subscriptions")
        let answersWith = try await pacedAnswers(subscribed, label: "sends with a push each")
        say(
            String(
                format: "below saturation, a send's answer with a push / without: p50 %.2f, p99 %.2f",
                answersWith.p50 / answersWithout.p50,
                answersWith.p99 / answersWithout.p99
            )
        )

        // 3. Sends as fast as they go, without and with subscriptions.
        func closedLoop(_ to: [Device], label: String) async throws -> (rate: Double, report: Report?) {
            let batch = try await sealed(notifications, to: to)
            let times = await issue(batch.map(\.request), pool: pool, rate: nil, window: Self.window)
            let r = times.rate()
            say(String(format: "%@: %.0f sends/s (%@)", label, r, times.statusSummary()))
            if to.first?.index == subscribed.first?.index {
                await settle(receiver, expecting: notifications)
                return (r, report(batch, times, receiver.take(), subscribers, label: label))
            }
            return (r, nil)
        }
        let without1 = try await closedLoop(plain, label: "sends without subscriptions")
        let with = try await closedLoop(subscribed, label: "sends with subscriptions")
        let without2 = try await closedLoop(plain, label: "sends without subscriptions, again")
        let sendRatio = with.rate / ((without1.rate + without2.rate) / 2)

        // 4. Sign-ins alone, then beside a steady stream of messages without pushes, then with them: the
        // notifications' own cost is the difference between the last two.
        let signInsAlone = await signIns(plain, pool: pool, hostHeader: hostHeader)
        func beside(_ to: [Device], label: String) async throws -> Double {
            let count = Int(background * signInSeconds)
            let stream = try await sealed(count, to: to)
            async let streamed = issue(stream.map(\.request), pool: pool, rate: background, window: 4 * Self.window)
            let rate = await signIns(plain, pool: pool, hostHeader: hostHeader)
            let times = await streamed
            let pushed = to.first?.index == subscribed.first?.index
            if pushed { await settle(receiver, expecting: count) }
            let received = receiver.take().count
            say(
                String(
                    format: "sign-ins beside %.0f messages/s %@: %.1f/s (%@%@)",
                    times.rate(),
                    label,
                    rate,
                    times.statusSummary(),
                    pushed ? ", \(received) of \(count) notified" : ""
                )
            )
            return rate
        }
        let signInsBesideSends = try await beside(plain, label: "without pushes")
        let signInsBesidePushes = try await beside(subscribed, label: "with a push each")
        let signInRatio = signInsBesidePushes / signInsBesideSends
        say(
            String(
                format: "sign-ins: %.1f/s alone; beside pushes / beside the same sends without: %.3f",
                signInsAlone,
                signInRatio
            )
        )

        if let metricsToken { await printMetrics(token: metricsToken, pool: pool, hostHeader: hostHeader) }
        pool.close()
        await receiver.close()
        try? await group.shutdownGracefully()

        let ratio = pacedReport.perSecond / raw.perSecond
        let met = { (ok: Bool) in ok ? "met" : "NOT met" }
        say(
            "goals: >= 2,000 notifications/s \(met(pacedReport.perSecond >= 2000)) (\(Int(pacedReport.perSecond))); "
                + "p99 <= 250 ms \(met(pacedReport.p99 <= 250)) (\(String(format: "%.1f", pacedReport.p99))); "
                + "sends with pushes >= 0.95 of without \(met(sendRatio >= 0.95)) (\(String(format: "%.3f", sendRatio))); "
                + "sign-ins beside pushes >= 0.95 of beside the same sends \(met(signInRatio >= 0.95)) (\(String(format: "%.3f", signInRatio))); "
                + "lost 0 \(met(pacedReport.lost == 0 && (with.report?.lost ?? 1) == 0))"
        )
        say(
            String(
                format:
                    "notify: %d notifications at %.0f/s offered, %.0f/s received, p50 %.1f ms, p99 %.1f ms send→receipt; "
                    + "raw %.0f/s (ratio %.3f); sends with/without pushes %.3f; sign-ins beside pushes/sends %.3f; lost %d",
                notifications,
                rate,
                pacedReport.perSecond,
                pacedReport.p50,
                pacedReport.p99,
                raw.perSecond,
                ratio,
                sendRatio,
                signInRatio,
                pacedReport.lost + (with.report?.lost ?? 0)
            )
        )
    }

    // MARK: The peer

    static func rawSeal(seconds: Double) async -> (perSecond: Double, workers: Int) {
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let receiver = P256.KeyAgreement.PrivateKey()
        let p256dh = Array(receiver.publicKey.x963Representation)
        let auth = [UInt8](repeating: 7, count: 16)
        let payload = Array(#"{"id":"\#(String(repeating: "a", count: 64))","kind":"message"}"#.utf8)
        let headers = HeaderCache()
        let start = ContinuousClock.now
        let deadline = start + .seconds(seconds)
        let total = await withTaskGroup(of: Int.self) { tasks in
            for _ in 0..<workers {
                tasks.addTask {
                    var n = 0
                    while ContinuousClock.now < deadline {
                        for _ in 0..<50 {
                            // What the server does per push: the cached header's lookup, then the sealing.
                            _ = headers.tokens.withLock { $0["http://127.0.0.1"] }
                            _ = try? WebPushMessage.seal(payload, p256dh: p256dh, auth: auth, paddedSize: 256)
                        }
                        n += 50
                    }
                    return n
                }
            }
            return await tasks.reduce(0, +)
        }
        return (Double(total) / (ContinuousClock.now - start).seconds, workers)
    }

    static func rawSignatures(seconds: Double) async -> Double {
        let key = P256.Signing.PrivateKey()
        let message = Array(repeating: UInt8(1), count: 200)
        let start = ContinuousClock.now
        var n = 0
        while ContinuousClock.now - start < .seconds(seconds) {
            _ = try? key.signature(for: message)
            n += 1
        }
        return Double(n) / (ContinuousClock.now - start).seconds
    }

    // MARK: Sending

    /// Sends `requests`, paced at `rate` per second (nil: as fast as `window` in flight allow), from a thread
    /// of its own; returns when every one is answered (or 30 s passed without an answer).
    func issue(_ requests: [HTTPRequest], pool: HTTPPool, rate: Double?, window: Int) async -> Timings {
        let timings = Timings(count: requests.count)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                let room = Self.semaphore(window)
                let start = now() + 20_000_000
                var held = 0
                for (i, request) in requests.enumerated() {
                    if let rate { sleep(until: start + UInt64(Double(i) * 1e9 / rate)) }
                    guard room.wait(timeout: .now() + 30) == .success else { break }
                    held += 1
                    pool.send(request, onWrite: { timings.sent(i) }).whenComplete { result in
                        timings.answered(i, status: (try? result.get().status) ?? -1)
                        room.signal()
                    }
                }
                for _ in 0..<min(held, window) { _ = room.wait(timeout: .now() + 30) }
                done.resume()
            }.start()
        }
        return timings
    }

    /// A semaphore holding `n`, made at 0 and raised: libdispatch traps when one made at n is freed below n,
    /// as it is when an answer never came.
    static func semaphore(_ n: Int) -> DispatchSemaphore {
        let s = DispatchSemaphore(value: 0)
        for _ in 0..<n { s.signal() }
        return s
    }

    /// Password sign-ins, `signInWindow` in flight, for `signInSeconds`: the sign-ins answered 201 per second.
    func signIns(_ accounts: [Device], pool: HTTPPool, hostHeader: String) async -> Double {
        let requests = accounts.map { d in
            HTTPRequest(
                method: .POST,
                path: "/v1/sessions",
                host: hostHeader,
                token: nil,
                json: ByteBuffer(string: #"{"username":"\#(d.username)","password":"\#(Setup.password)"}"#)
            )
        }
        let ok = Counter()
        let other = Counter()
        let seconds = signInSeconds
        let elapsed = await withCheckedContinuation { (done: CheckedContinuation<Double, Never>) in
            Thread {
                let room = Self.semaphore(Self.signInWindow)
                let start = now()
                let end = start + UInt64(seconds * 1e9)
                var i = 0
                while now() < end {
                    guard room.wait(timeout: .now() + 30) == .success else { break }
                    pool.send(requests[i % requests.count]).whenComplete { result in
                        if now() <= end {
                            if (try? result.get().status) == 201 {
                                ok.value.add(1, ordering: .relaxed)
                            } else {
                                other.value.add(1, ordering: .relaxed)
                            }
                        }
                        room.signal()
                    }
                    i += 1
                }
                for _ in 0..<Self.signInWindow { _ = room.wait(timeout: .now() + 30) }
                done.resume(returning: Double(end - start) / 1e9)
            }.start()
        }
        let failed = other.value.load(ordering: .relaxed)
        if failed > 0 { say("sign-ins: \(failed) answered other than 201") }
        return Double(ok.value.load(ordering: .relaxed)) / elapsed
    }

    /// Waits until `expecting` pushes arrived, or nothing arrived for `settleSeconds`.
    func settle(_ receiver: PushReceiver, expecting: Int) async {
        var last = receiver.count()
        var quietSince = ContinuousClock.now
        while last < expecting, ContinuousClock.now - quietSince < .seconds(Self.settleSeconds) {
            try? await Task.sleep(for: .milliseconds(20))
            let n = receiver.count()
            if n != last {
                last = n
                quietSince = ContinuousClock.now
            }
        }
    }

    // MARK: Reading what arrived

    struct Report {
        let perSecond: Double
        let p50: Double
        let p99: Double
        let lost: Int
    }

    /// Opens every body with its subscription's keys, matches it to its message, and prints what came.
    func report(
        _ sealed: [Run.Sealed],
        _ timings: Timings,
        _ receipts: [PushReceiver.Receipt],
        _ subscribers: [Int: Subscriber],
        label: String
    ) -> Report {
        let index = Dictionary(sealed.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { a, _ in a })
        let t = timings.state.withLock { $0 }
        var latency = [Double]()
        var fromAnswer = [Double]()
        var seen = Set<Int>()
        var unreadable = [String: Int]()
        var duplicates = 0
        var lengths = Set<Int>()
        var tokens = Set<String>()
        for r in receipts {
            lengths.insert(r.body.count)
            tokens.insert(r.authorization)
            guard let s = subscribers[r.device] else {
                unreadable["no subscription at its path", default: 0] += 1
                continue
            }
            let plain: [UInt8]
            do { plain = try WebPushMessage.open(r.body, privateKey: s.key, auth: s.auth) } catch {
                let other = subscribers.first {
                    (try? WebPushMessage.open(r.body, privateKey: $0.value.key, auth: $0.value.auth)) != nil
                }
                unreadable[
                    "\(error)" + (other.map { " (opens with device \($0.key)'s keys, path \(r.device))" } ?? ""),
                    default: 0
                ] += 1
                continue
            }
            guard let object = try? JSONSerialization.jsonObject(with: Data(plain)) as? [String: String],
                object["kind"] == "message", let id = object["id"]
            else {
                unreadable["not a message push", default: 0] += 1
                continue
            }
            guard let i = index[id] else {
                unreadable["another phase's message", default: 0] += 1
                continue
            }
            if !seen.insert(i).inserted {
                duplicates += 1
                continue
            }
            if t.sent[i] != 0 { latency.append(Double(Int64(r.at) - Int64(t.sent[i])) / 1e6) }
            if t.answered[i] != 0 { fromAnswer.append(Double(Int64(r.at) - Int64(t.answered[i])) / 1e6) }
        }
        latency.sort()
        fromAnswer.sort()
        let accepted = (0..<sealed.count).filter { t.status[$0] == 201 }
        let lost = accepted.count { !seen.contains($0) }
        let firstSend = t.sent.filter { $0 != 0 }.min() ?? 0
        let lastReceipt = receipts.map(\.at).max() ?? 0
        let perSecond = lastReceipt > firstSend ? Double(seen.count) / (Double(lastReceipt - firstSend) / 1e9) : 0
        say(
            String(
                format: "%@: %d sent (%@), %d notified, %.0f/s from the first send to the last receipt; lost %d, "
                    + "duplicates %d, unreadable %d%@; body lengths %@; VAPID tokens %d",
                label,
                sealed.count,
                timings.statusSummary(),
                seen.count,
                perSecond,
                lost,
                duplicates,
                unreadable.values.reduce(0, +),
                unreadable.isEmpty
                    ? "" : " (" + unreadable.map { "\($0.value)x \($0.key)" }.joined(separator: ", ") + ")",
                lengths.sorted().map(String.init).joined(separator: ","),
                tokens.count
            )
        )
        say(
            String(
                format:
                    "%@: send→receipt ms p50 %.1f, p90 %.1f, p99 %.1f, max %.1f; answer→receipt ms p50 %.1f, p99 %.1f",
                label,
                pct(latency, 50),
                pct(latency, 90),
                pct(latency, 99),
                latency.last ?? .nan,
                pct(fromAnswer, 50),
                pct(fromAnswer, 99)
            )
        )
        return Report(perSecond: perSecond, p50: pct(latency, 50), p99: pct(latency, 99), lost: lost)
    }

    func printMetrics(token: String, pool: HTTPPool, hostHeader: String) async {
        var request = HTTPRequest(method: .GET, path: "/metrics", host: hostHeader, token: token, json: nil)
        request.head.headers.replaceOrAdd(name: "Accept", value: "text/plain")
        guard let reply = try? await pool.send(request).get(), reply.status == 200 else {
            say("/metrics did not answer")
            return
        }
        let lines = String(buffer: reply.body).split(separator: "\n").filter {
            $0.hasPrefix("countersign_notifications") && !$0.hasSuffix(" 0")
        }
        say("server metrics: " + lines.joined(separator: "; "))
    }
}

/// The server's VAPID header cache, as the raw rate pays for it: one lookup under a lock per push.
final class HeaderCache: Sendable {
    let tokens = Mutex<[String: String]>(["http://127.0.0.1": "vapid t=cached, k=cached"])
}

/// When each request was written and answered (monotonic ns; 0: not yet) and its status (-1: no answer).
final class Timings: Sendable {
    struct State {
        var sent: [UInt64]
        var answered: [UInt64]
        var status: [Int]
    }

    let state: Mutex<State>

    init(count: Int) {
        state = Mutex(
            State(
                sent: .init(repeating: 0, count: count),
                answered: .init(repeating: 0, count: count),
                status: .init(repeating: 0, count: count)
            )
        )
    }

    func sent(_ i: Int) {
        let t = now()
        state.withLock { $0.sent[i] = t }
    }

    func answered(_ i: Int, status: Int) {
        let t = now()
        state.withLock {
            $0.answered[i] = t
            $0.status[i] = status
        }
    }

    /// Each answered request's time from its write to its answer, sorted.
    func answerMilliseconds() -> [Double] {
        let s = state.withLock { $0 }
        return s.sent.indices.compactMap { i in
            s.sent[i] == 0 || s.answered[i] == 0 ? nil : Double(Int64(s.answered[i]) - Int64(s.sent[i])) / 1e6
        }.sorted()
    }

    /// Answers per second, from the first write to the last answer.
    func rate() -> Double {
        let s = state.withLock { $0 }
        let first = s.sent.filter { $0 != 0 }.min() ?? 0
        let last = s.answered.max() ?? 0
        let n = s.status.count { $0 != 0 }
        return last > first ? Double(n) / (Double(last - first) / 1e9) : 0
    }

    func statusSummary() -> String {
        var counts = [Int: Int]()
        for s in state.withLock({ $0.status }) { counts[s, default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map {
            "\($0.key == -1 ? "error" : $0.key == 0 ? "unsent" : "\($0.key)") x\($0.value)"
        }
        .joined(separator: ", ")
    }
}

func pct(_ xs: [Double], _ p: Double) -> Double {
    guard !xs.isEmpty else { return .nan }
    return xs[min(xs.count - 1, max(0, Int((p / 100 * Double(xs.count)).rounded(.up)) - 1))]
}

func sleep(until due: UInt64) {
    var t = now()
    while t < due {
        var ts = timespec(tv_sec: Int((due - t) / 1_000_000_000), tv_nsec: Int((due - t) % 1_000_000_000))
        nanosleep(&ts, nil)
        t = now()
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
