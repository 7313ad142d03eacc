import CountersignAPI
import CountersignCrypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct Device: Sendable {
    let index: Int
    let username: String
    let deviceID: String
    let token: String
    let key: PublicKey
}

struct Sender: Sendable {
    let username: String
    let token: String
    let identity: Identity
}

struct Run {
    let host: String
    let port: Int
    let serverPID: Int32
    let dir: URL
    let conns: Int
    let rate: Double
    let seconds: Double

    static let parallel = 200
    static let httpConnections = 32
    static let idleSeconds: UInt64 = 5
    static let deliveryGrace: UInt64 = 10

    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The generator holds CONNS sockets: take the whole hard limit.
    static func raiseFileLimit() -> UInt64 {
        var limit = rlimit()
        let resource = Int32(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(resource, &limit)
            _ = getrlimit(resource, &limit)
        }
        return UInt64(limit.rlim_cur)
    }

    /// VmRSS of the server, in KiB.
    func serverRSS() -> Int { serverStatus("VmRSS") }

    /// A KiB field of /proc/PID/status (VmRSS, RssAnon, RssFile); -1 when unreadable.
    func serverStatus(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(serverPID)/status", encoding: .utf8) else { return -1 }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? -1
        }
        return -1
    }

    func rssParts() -> String {
        "anon \(serverStatus("RssAnon")) KiB, file \(serverStatus("RssFile")) KiB, threads \(serverStatus("Threads"))"
    }

    static func loadDevices(dir: URL) throws -> [Device] {
        let text = try String(contentsOf: dir.appendingPathComponent("devices.tsv"), encoding: .utf8)
        return try text.split(separator: "\n").enumerated().map { i, line in
            let f = line.split(separator: "\t").map(String.init)
            guard f.count == 4, let spki = Base64URL(text: f[3]) else {
                throw PushFailure(description: "devices.tsv line \(i + 1) is malformed")
            }
            return Device(index: i, username: f[0], deviceID: f[1], token: f[2], key: try PublicKey(spki: spki.bytes))
        }
    }

    static func loadSenders(dir: URL) throws -> [Sender] {
        let text = try String(contentsOf: dir.appendingPathComponent("senders.tsv"), encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            let f = line.split(separator: "\t").map(String.init)
            guard f.count == 3, let pem = Data(base64Encoded: f[2]) else {
                throw PushFailure(description: "senders.tsv is malformed")
            }
            return Sender(
                username: f[0],
                token: f[1],
                identity: try Identity(pem: String(decoding: pem, as: UTF8.self), passphrase: { [] })
            )
        }
    }

    func run() async throws {
        let fileLimit = Self.raiseFileLimit()
        let devices = Array(try Self.loadDevices(dir: dir).prefix(conns))
        let senders = try Self.loadSenders(dir: dir)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        let recorder = Recorder()
        let hostHeader = "\(host):\(port)"
        say(
            "generator: \(devices.count) devices, \(senders.count) senders, file limit \(fileLimit), \(System.coreCount) event loops"
        )

        // Warm the HTTP side (and the server's ticket path) before the baseline.
        let pool = HTTPPool(group: group, host: host, port: port, size: Self.httpConnections)
        try await pool.open()
        for d in devices.prefix(64) { _ = try await ticket(d, pool: pool, hostHeader: hostHeader) }
        try await Task.sleep(for: .seconds(2))
        let rssBefore = serverRSS()
        say("server RSS before: \(rssBefore) KiB (\(rssParts()))")

        // Connect everything, PARALLEL at a time, then retry what failed.
        let connectStart = ContinuousClock.now
        var pending = devices.map(\.index)
        var channels = [Int: any Channel]()
        var failures = [String: Int]()
        for attempt in 1...4 {
            guard !pending.isEmpty else { break }
            if attempt > 1 {
                say("retrying \(pending.count) connections (attempt \(attempt))")
                try await Task.sleep(for: .seconds(1))
            }
            let (ok, failed) = await connectAll(
                pending.map { devices[$0] },
                group: group,
                pool: pool,
                recorder: recorder,
                hostHeader: hostHeader,
                parallel: attempt == 1 ? Self.parallel : Self.parallel / 4
            )
            for (i, c) in ok { channels[i] = c }
            pending = failed.map(\.0)
            var reasons = [String: Int]()
            for (_, why) in failed {
                failures[why, default: 0] += 1
                reasons[why, default: 0] += 1
            }
            if !failed.isEmpty {
                say(
                    "  attempt \(attempt): \(failed.count) failed: "
                        + reasons.sorted { $0.value > $1.value }.prefix(4).map { "\($0.value)x \($0.key)" }.joined(
                            separator: ", "
                        )
                )
            }
        }
        let connectTime = ContinuousClock.now - connectStart
        let connected = channels.keys.sorted()
        say(
            "connected \(connected.count)/\(devices.count) in \(secs(connectTime)) s"
                + (failures.isEmpty
                    ? ""
                    : "; failed attempts: "
                        + failures.sorted { $0.value > $1.value }.map { "\($0.value)x \($0.key)" }.joined(
                            separator: ", "
                        ))
        )
        pool.close()

        // Pre-seal every envelope of the timed phase (sealed to the target and the sender's own device,
        // signed by the sender), as ready request bodies.
        let count = Int(rate * seconds)
        let sealStart = ContinuousClock.now
        let targets = (0..<count).map { _ in connected.randomElement() ?? 0 }
        let sealed = try await Self.seal(
            count: count,
            targets: targets,
            devices: devices,
            senders: senders,
            hostHeader: hostHeader
        )
        recorder.prepare(ids: sealed.map(\.id), targets: targets)
        say("sealed \(count) envelopes in \(secs(ContinuousClock.now - sealStart)) s")

        try await Task.sleep(for: .seconds(Self.idleSeconds))
        let rssAfter = serverRSS()
        let dropsBefore = recorder.state.withLock { $0.dropped.values.reduce(0, +) }
        let perConnection = connected.isEmpty ? 0 : Double(rssAfter - rssBefore) / Double(connected.count)
        say(
            "server RSS after \(connected.count) connections idle \(Self.idleSeconds) s: \(rssAfter) KiB "
                + String(format: "(+%d KiB, %.1f KiB per connection)", rssAfter - rssBefore, perConnection)
                + (dropsBefore > 0 ? "; \(dropsBefore) connections dropped while idle" : "") + " (\(rssParts()))"
        )

        // The timed phase: a fresh pool (the first one may have idled toward the server's timeout).
        let sendPool = HTTPPool(group: group, host: host, port: port, size: Self.httpConnections)
        try await sendPool.open()
        await pace(sealed, pool: sendPool, recorder: recorder)
        // Every answer, then up to 10 s for the deliveries.
        let answerDeadline = now() + 30_000_000_000
        while recorder.state.withLock({ $0.answered }) < count, now() < answerDeadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let sendEnd = now()
        let deliveryDeadline = sendEnd + Self.deliveryGrace * 1_000_000_000
        func undelivered() -> Int {
            recorder.state.withLock { s in (0..<count).count { s.status[$0] == 201 && s.receivedAt[$0] == 0 } }
        }
        while undelivered() > 0, now() < deliveryDeadline { try await Task.sleep(for: .milliseconds(20)) }
        sendPool.close()

        let s = recorder.state.withLock { $0 }
        let writes = s.sentAt.filter { $0 != 0 }
        let firstWrite = writes.min() ?? 0
        let lastWrite = writes.max() ?? 0
        let accepted = (0..<count).filter { s.status[$0] == 201 }
        let lost = accepted.count { s.receivedAt[$0] == 0 }
        let latencies = accepted.compactMap { i -> Double? in
            s.receivedAt[i] == 0 ? nil : Double(Int64(s.receivedAt[i]) - Int64(s.sentAt[i])) / 1e6
        }.sorted()
        let answers = (0..<count).compactMap {
            s.answeredAt[$0] == 0 || s.sentAt[$0] == 0
                ? nil : Double(Int64(s.answeredAt[$0]) - Int64(s.sentAt[$0])) / 1e6
        }.sorted()
        let achieved = lastWrite > firstWrite ? Double(writes.count - 1) / (Double(lastWrite - firstWrite) / 1e9) : 0
        var statuses = [Int: Int]()
        for i in 0..<count { statuses[Int(s.status[i]), default: 0] += 1 }
        func pct(_ xs: [Double], _ p: Double) -> Double {
            guard !xs.isEmpty else { return .nan }
            return xs[min(xs.count - 1, max(0, Int((p / 100 * Double(xs.count)).rounded(.up)) - 1))]
        }
        let p50 = pct(latencies, 50)
        let p99 = pct(latencies, 99)
        say(
            "sent \(count) in \(String(format: "%.2f", Double(lastWrite - firstWrite) / 1e9)) s = \(String(format: "%.0f", achieved)) msgs/s; answers: "
                + statuses.sorted { $0.key < $1.key }.map { "\($0.key == -1 ? "error" : "\($0.key)") x\($0.value)" }
                .joined(separator: ", ")
        )
        say(
            String(
                format: "POST answer ms: p50 %.2f, p99 %.2f, max %.2f",
                pct(answers, 50),
                pct(answers, 99),
                answers.last ?? .nan
            )
        )
        say(
            String(
                format: "send→receive ms over %d delivered: p50 %.2f, p90 %.2f, p99 %.2f, p99.9 %.2f, max %.2f",
                latencies.count,
                p50,
                pct(latencies, 90),
                p99,
                pct(latencies, 99.9),
                latencies.last ?? .nan
            )
        )
        let slow = latencies.count { $0 > 25 }
        if slow > 0 { say("over 25 ms: \(slow) deliveries") }
        say(
            "unexpected: \(s.duplicates) duplicates, \(s.wrongDevice) to the wrong device, \(s.other) unknown messages; connections dropped: "
                + (s.dropped.isEmpty
                    ? "none"
                    : s.dropped.sorted { $0.key < $1.key }.map { "\($0.value) (close \($0.key))" }.joined(
                        separator: ", "
                    ))
        )
        say("server RSS at the end: \(serverRSS()) KiB")
        let met = { (ok: Bool) in ok ? "met" : "NOT met" }
        say(
            "goals: 10,000 connections on one node \(met(connected.count >= 10_000)) (\(connected.count)); "
                + "<= 16 KiB per idle connection \(met(perConnection <= 16)) (\(String(format: "%.1f", perConnection))); "
                + "p99 <= 25 ms at 1,000 msgs/s \(met(p99 <= 25 && achieved >= 990 && rate >= 1000)) (\(String(format: "%.2f ms at %.0f/s", p99, achieved))); "
                + "lost 0 \(met(lost == 0 && !accepted.isEmpty)) (\(lost))"
        )
        for c in channels.values { c.close(promise: nil) }
        try? await group.shutdownGracefully()
        say(
            String(
                format:
                    "push: %d connections, %.1f KiB per idle connection, p50 %.1f ms, p99 %.1f ms at %.0f msgs/s, lost %d",
                connected.count,
                perConnection,
                p50,
                p99,
                achieved,
                lost
            )
        )
    }

    func ticket(_ d: Device, pool: HTTPPool, hostHeader: String) async throws -> String {
        let reply = try await pool.send(
            HTTPRequest(
                method: .POST,
                path: "/v1/devices/current/push-tickets",
                host: hostHeader,
                token: d.token,
                json: nil
            )
        ).get()
        guard reply.status == 201,
            let object = try? JSONSerialization.jsonObject(with: Data(reply.body.readableBytesView)) as? [String: Any],
            let ticket = object["ticket"] as? String
        else {
            throw PushFailure(description: "ticket answered \(reply.status)")
        }
        return ticket
    }

    /// Connects `devices`, at most `parallel` at a time; the channels of those that reached queueEmpty, and
    /// why the others failed.
    func connectAll(
        _ devices: [Device],
        group: MultiThreadedEventLoopGroup,
        pool: HTTPPool,
        recorder: Recorder,
        hostHeader: String,
        parallel: Int
    ) async -> ([(Int, any Channel)], [(Int, String)]) {
        let next = Counter()
        let progress = Counter()
        let total = devices.count
        let host = self.host
        let port = self.port
        return await withTaskGroup(of: ([(Int, any Channel)], [(Int, String)]).self) { tasks in
            for _ in 0..<min(parallel, devices.count) {
                tasks.addTask {
                    var ok: [(Int, any Channel)] = []
                    var failed: [(Int, String)] = []
                    while true {
                        let i = next.value.add(1, ordering: .relaxed).oldValue
                        guard i < devices.count else { break }
                        let d = devices[i]
                        do {
                            let t = try await ticket(d, pool: pool, hostHeader: hostHeader)
                            let c = try await PushClient.connect(
                                device: d.index,
                                ticket: t,
                                host: host,
                                port: port,
                                loop: group.next(),
                                recorder: recorder
                            )
                            ok.append((d.index, c))
                            let n = progress.value.add(1, ordering: .relaxed).newValue
                            if n % 2000 == 0, n < total { say("  \(n)/\(total) connected") }
                        } catch {
                            failed.append((d.index, String(describing: error)))
                        }
                    }
                    return (ok, failed)
                }
            }
            var ok: [(Int, any Channel)] = []
            var failed: [(Int, String)] = []
            for await (o, f) in tasks {
                ok += o
                failed += f
            }
            return (ok, failed)
        }
    }

    struct Sealed: Sendable {
        let id: String
        let request: HTTPRequest
    }

    static func seal(
        count: Int,
        targets: [Int],
        devices: [Device],
        senders: [Sender],
        hostHeader: String
    ) async throws -> [Sealed] {
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        return try await withThrowingTaskGroup(of: (Int, [Sealed]).self) { group in
            for w in 0..<workers {
                group.addTask {
                    let encoder = APICoding.encoder()
                    var out: [Sealed] = []
                    for i in stride(from: w, to: count, by: workers) {
                        let sender = senders[i % senders.count]
                        let target = devices[targets[i]]
                        let envelope = try MessageEnvelope.seal(
                            Array("push benchmark message \(i)".utf8),
                            from: sender.identity,
                            to: [target.key, sender.identity.publicKey],
                            created: Date()
                        )
                        let body = try encoder.encode(
                            SendMessageRequest(to: [target.username], envelope: Base64URL(envelope.bytes))
                        )
                        out.append(
                            Sealed(
                                id: Hex.encode(envelope.messageID),
                                request: HTTPRequest(
                                    method: .POST,
                                    path: "/v1/messages",
                                    host: hostHeader,
                                    token: sender.token,
                                    json: ByteBuffer(bytes: body)
                                )
                            )
                        )
                    }
                    return (w, out)
                }
            }
            var parts = [[Sealed]](repeating: [], count: workers)
            for try await (w, part) in group { parts[w] = part }
            // Interleave back into send order.
            return (0..<count).map { parts[$0 % workers][$0 / workers] }
        }
    }

    /// Sends `sealed` at `rate` per second from a thread of its own (sleeping to each send's due time);
    /// returns when the last one is handed to the pool.
    func pace(_ sealed: [Sealed], pool: HTTPPool, recorder: Recorder) async {
        let interval = 1e9 / rate
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                let start = now() + 20_000_000
                for (i, m) in sealed.enumerated() {
                    let due = start + UInt64(Double(i) * interval)
                    var t = now()
                    while t < due {
                        var ts = timespec(
                            tv_sec: Int((due - t) / 1_000_000_000),
                            tv_nsec: Int((due - t) % 1_000_000_000)
                        )
                        nanosleep(&ts, nil)
                        t = now()
                    }
                    pool.send(m.request, onWrite: { recorder.sent(i, at: now()) }).whenComplete { result in
                        let t = now()
                        switch result {
                        case .success(let reply): recorder.answered(i, status: reply.status, at: t)
                        case .failure: recorder.answered(i, status: -1, at: t)
                        }
                    }
                }
                done.resume()
            }
            thread.start()
        }
    }
}

final class Counter: Sendable {
    let value = Atomic<Int>(0)
}
