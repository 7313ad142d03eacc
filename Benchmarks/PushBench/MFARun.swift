import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import JWTKit
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One paired authenticator of authenticators.tsv, with what it signs and verifies with.
struct BenchAuthenticator: Sendable {
    let index: Int
    let username: String
    let deviceID: String
    let token: String
    /// Its signing key, for answers; the server's challenge key, for challenges (one collection each:
    /// jwt-kit's collections are actors).
    let signer: JWTKeyCollection
    let verifier: JWTKeyCollection
}

/// Claims as a jwt-kit payload with the same JSON; the server checks times, as the SDK's does.
struct BenchClaims<C: Codable & Sendable>: JWTPayload {
    let claims: C
    init(_ claims: C) { self.claims = claims }
    init(from decoder: any Decoder) throws { claims = try C(from: decoder) }
    func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Where the two sides of one sign-in meet: the sign-in side learns the number from its 202, the
/// authenticator the challenge from its push channel; whichever arrives second starts the answer.
final class Rendezvous: Sendable {
    struct Entry {
        var number: String?
        var challenge: (device: Int, claims: ChallengeClaims)?
        var challengeReadAt: UInt64 = 0
        var answered = false
    }
    private let entries = Mutex([String: Entry]())

    /// The halves, once both are known (and only once).
    private func take(_ e: inout Entry) -> (device: Int, claims: ChallengeClaims, number: String)? {
        guard !e.answered, let n = e.number, let c = e.challenge else { return nil }
        e.answered = true
        return (c.device, c.claims, n)
    }

    func number(_ number: String, txn: String) -> (device: Int, claims: ChallengeClaims, number: String)? {
        entries.withLock { all in
            all[txn, default: Entry()].number = number
            return take(&all[txn]!)
        }
    }

    func challenge(
        _ claims: ChallengeClaims,
        device: Int,
        readAt: UInt64
    ) -> (device: Int, claims: ChallengeClaims, number: String)? {
        entries.withLock { all in
            all[claims.txn, default: Entry()].challenge = (device, claims)
            all[claims.txn]!.challengeReadAt = readAt
            return take(&all[claims.txn]!)
        }
    }

    func challengeReadAt(_ txn: String) -> UInt64 { entries.withLock { $0[txn]?.challengeReadAt ?? 0 } }
}

/// Per timed sign-in: when each step happened (uptime ns; 0 = never) and how it ended.
final class FlowRecorder: Sendable {
    struct Flow {
        var account = 0
        var txn = ""
        var requestWritten: UInt64 = 0
        var mfaRequired: UInt64 = 0
        var session: UInt64 = 0
        var failure: String?
    }
    let flows: Mutex<[Flow]>
    init(count: Int) { flows = Mutex(Array(repeating: Flow(), count: count)) }
    func update(_ i: Int, _ change: (inout Flow) -> Void) { flows.withLock { change(&$0[i]) } }
}

/// When each transaction's answer was acknowledged by the server, and with which status.
final class AnswerLog: Sendable {
    let entries = Mutex([String: (UInt64, Int)]())
    func record(_ txn: String, status: Int) {
        let t = now()
        entries.withLock { $0[txn] = (t, status) }
    }
}

/// Keep-alive connections each used by one sign-in at a time (a long poll holds its connection).
final class ConnectionLease: Sendable {
    let group: any EventLoopGroup
    let host: String
    let port: Int
    private let idle = Mutex([HTTPConnection]())
    init(group: any EventLoopGroup, host: String, port: Int) {
        self.group = group
        self.host = host
        self.port = port
    }
    func acquire() -> HTTPConnection {
        idle.withLock { $0.popLast() } ?? HTTPConnection(loop: group.next(), host: host, port: port)
    }
    func release(_ c: HTTPConnection) { idle.withLock { $0.append(c) } }
    func open(_ n: Int) async throws {
        let cs = (0..<n).map { _ in acquire() }
        for c in cs {
            try await c.open().get()
            release(c)
        }
    }
    func close() { idle.withLock { all in all.forEach { $0.close() } } }
}

struct MFARun {
    let host: String
    let port: Int
    let serverPID: Int32
    let dir: URL
    let count: Int
    let rate: Double
    let seconds: Double

    func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    func load() async throws -> [BenchAuthenticator] {
        let text = try String(contentsOf: dir.appendingPathComponent("authenticators.tsv"), encoding: .utf8)
        var out: [BenchAuthenticator] = []
        for (i, line) in text.split(separator: "\n").enumerated() {
            let f = line.split(separator: "\t").map(String.init)
            guard f.count == 6, let pem = Data(base64Encoded: f[3]) else {
                throw PushFailure(description: "authenticators.tsv line \(i + 1) is malformed")
            }
            let identity = try Identity(pem: String(decoding: pem, as: UTF8.self), passphrase: { [] })
            let signer = JWTKeyCollection()
            await signer.add(
                ecdsa: try ES256PrivateKey(backing: P256.Signing.PrivateKey(rawRepresentation: identity.privateScalar))
            )
            let verifier = JWTKeyCollection()
            await verifier.add(ecdsa: try ES256PublicKey(parameters: (x: f[4], y: f[5])))
            out.append(
                BenchAuthenticator(
                    index: i,
                    username: f[0],
                    deviceID: f[1],
                    token: f[2],
                    signer: signer,
                    verifier: verifier
                )
            )
        }
        return out
    }

    func run() async throws {
        let fileLimit = Run.raiseFileLimit()
        let all = try await load()
        let authenticators = Array(all.prefix(count))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        let hostHeader = "\(host):\(port)"
        let pushRun = Run(
            host: host,
            port: port,
            serverPID: serverPID,
            dir: dir,
            conns: authenticators.count,
            rate: rate,
            seconds: seconds
        )
        say(
            "generator: \(authenticators.count) authenticators, file limit \(fileLimit), \(System.coreCount) event loops"
                + (Int(rate * seconds) > authenticators.count
                    ? "; \(Int(rate * seconds)) sign-ins: accounts signed in more than once" : "")
        )

        let total = Int(rate * seconds)
        let recorder = FlowRecorder(count: total)
        let rendezvous = Rendezvous()
        let answerPool = HTTPPool(group: group, host: host, port: port, size: 16)
        try await answerPool.open()
        let unexpected = Counter()
        let answers = AnswerLog()

        @Sendable func answer(_ device: Int, _ claims: ChallengeClaims, _ number: String) {
            Task {
                let a = authenticators[device]
                let claims = AnswerClaims(
                    iss: a.deviceID,
                    aud: claims.iss,
                    txn: claims.txn,
                    nonce: claims.nonce,
                    iat: Int64(Date().timeIntervalSince1970),
                    decision: "APPROVE",
                    number: number,
                    report: nil
                )
                do {
                    let jwt = try await a.signer.sign(BenchClaims(claims))
                    let body = ByteBuffer(bytes: try JSONEncoder().encode(PushAnswer(jwt: jwt)))
                    let reply = try await answerPool.send(
                        HTTPRequest(
                            method: .POST,
                            path: "/v1/authenticator/answers",
                            host: hostHeader,
                            token: a.token,
                            json: body
                        )
                    ).get()
                    answers.record(claims.txn, status: reply.status)
                } catch {
                    answers.record(claims.txn, status: -1)
                }
            }
        }
        // The authenticators' push channels: each challenge is checked against the server's key, then
        // waits for the number its sign-in shows.
        let onChallenge: @Sendable (Int) -> @Sendable (String, UInt64) -> Void = { device in
            { jwt, readAt in
                Task {
                    let a = authenticators[device]
                    guard let claims = try? await a.verifier.verify(jwt, as: BenchClaims<ChallengeClaims>.self).claims,
                        claims.aud == a.deviceID
                    else {
                        unexpected.value.add(1, ordering: .relaxed)
                        return
                    }
                    if let go = rendezvous.challenge(claims, device: device, readAt: readAt) {
                        answer(go.device, go.claims, go.number)
                    }
                }
            }
        }
        let ticketPool = HTTPPool(group: group, host: host, port: port, size: 16)
        try await ticketPool.open()
        try await Task.sleep(for: .seconds(1))
        let rssBefore = pushRun.serverRSS()
        let connectStart = ContinuousClock.now
        var channels: [any Channel] = []
        let pushRecorder = Recorder()
        for batch in stride(from: 0, to: authenticators.count, by: Run.parallel) {
            let part = authenticators[batch..<min(authenticators.count, batch + Run.parallel)]
            let opened = try await withThrowingTaskGroup(of: (any Channel).self) { tasks in
                for a in part {
                    tasks.addTask {
                        let reply = try await ticketPool.send(
                            HTTPRequest(
                                method: .POST,
                                path: "/v1/devices/current/push-tickets",
                                host: hostHeader,
                                token: a.token,
                                json: nil
                            )
                        ).get()
                        guard reply.status == 201,
                            let t = try? APICoding.decoder().decode(
                                PushTicket.self,
                                from: Data(reply.body.readableBytesView)
                            )
                        else {
                            throw PushFailure(description: "ticket for \(a.username) answered \(reply.status)")
                        }
                        return try await PushClient.connect(
                            device: a.index,
                            ticket: t.ticket,
                            host: host,
                            port: port,
                            loop: group.next(),
                            recorder: pushRecorder,
                            onChallenge: onChallenge(a.index)
                        )
                    }
                }
                return try await tasks.reduce(into: [any Channel]()) { $0.append($1) }
            }
            channels += opened
        }
        ticketPool.close()
        try await Task.sleep(for: .seconds(2))
        let rssAfter = pushRun.serverRSS()
        say(
            "connected \(channels.count) authenticators in \(secs(ContinuousClock.now - connectStart)) s; server RSS \(rssBefore) → \(rssAfter) KiB"
        )

        // The timed sign-ins at RATE per second: each account once while RATE*SECONDS <= COUNT, else in
        // turn (a success resets the account's push-fatigue count, so a later turn is not refused).
        let lease = ConnectionLease(group: group, host: host, port: port)
        try await lease.open(32)
        let order = Array(0..<authenticators.count).shuffled()
        let encoder = JSONEncoder()
        let decoder = APICoding.decoder()
        let done = Counter()

        @Sendable func flow(_ i: Int) async {
            let account = order[i % order.count]
            recorder.update(i) { $0.account = account }
            let conn = lease.acquire()
            defer { lease.release(conn) }
            func fail(_ why: String) { recorder.update(i) { $0.failure = why } }
            do {
                let body = ByteBuffer(
                    bytes: try encoder.encode(
                        SignInRequest(username: authenticators[account].username, password: Setup.password)
                    )
                )
                let reply = try await conn.send(
                    HTTPRequest(method: .POST, path: "/v1/sessions", host: hostHeader, token: nil, json: body),
                    onWrite: { recorder.update(i) { $0.requestWritten = now() } }
                ).get()
                let t1 = now()
                guard reply.status == 202,
                    let required = try? decoder.decode(MFARequired.self, from: Data(reply.body.readableBytesView)),
                    let number = required.transaction.numberMatching?.number
                else { return fail("sign-in answered \(reply.status)") }
                let txn = required.transaction.id
                recorder.update(i) {
                    $0.mfaRequired = t1
                    $0.txn = txn
                }
                if let go = rendezvous.number(number, txn: txn) { answer(go.device, go.claims, go.number) }
                var status = required.transaction.status
                let deadline = now() + 30_000_000_000
                while status == "PUSH_CONFIRMATION_REQUIRED", now() < deadline {
                    let poll = try await conn.send(
                        HTTPRequest(
                            method: .GET,
                            path: "/v1/mfa/transactions/\(txn)?wait=10",
                            host: hostHeader,
                            token: required.binding,
                            json: nil
                        ),
                        onWrite: nil
                    ).get()
                    guard poll.status == 200,
                        let view = try? decoder.decode(MFATransactionView.self, from: Data(poll.body.readableBytesView))
                    else {
                        return fail("long poll answered \(poll.status)")
                    }
                    status = view.status
                }
                guard status == "COMPLETED" else { return fail("transaction \(status)") }
                let session = try await conn.send(
                    HTTPRequest(
                        method: .POST,
                        path: "/v1/mfa/transactions/\(txn)/session",
                        host: hostHeader,
                        token: required.binding,
                        json: nil
                    ),
                    onWrite: nil
                ).get()
                let t4 = now()
                guard session.status == 201 else { return fail("session answered \(session.status)") }
                recorder.update(i) { $0.session = t4 }
            } catch {
                fail("\(error)")
            }
        }

        let paceStart = now()
        await withTaskGroup(of: Void.self) { tasks in
            let interval = 1e9 / rate
            for i in 0..<total {
                let due = paceStart + 20_000_000 + UInt64(Double(i) * interval)
                let t = now()
                if due > t { try? await Task.sleep(for: .nanoseconds(Int64(due - t))) }
                tasks.addTask {
                    await flow(i)
                    done.value.add(1, ordering: .relaxed)
                }
            }
        }
        lease.close()
        answerPool.close()

        let flows = recorder.flows.withLock { $0 }
        let answered = answers.entries.withLock { $0 }
        func pct(_ xs: [Double], _ p: Double) -> Double {
            guard !xs.isEmpty else { return .nan }
            return xs[min(xs.count - 1, max(0, Int((p / 100 * Double(xs.count)).rounded(.up)) - 1))]
        }
        func ms(_ a: UInt64, _ b: UInt64) -> Double { Double(Int64(b) - Int64(a)) / 1e6 }
        let ok = flows.filter { $0.session != 0 }
        var whole: [Double] = []
        var approval: [Double] = []
        var password: [Double] = []
        var frameAfter202: [Double] = []
        var answerPath: [Double] = []
        for f in ok {
            let challenge = rendezvous.challengeReadAt(f.txn)
            whole.append(ms(f.requestWritten, f.session))
            password.append(ms(f.requestWritten, f.mfaRequired))
            // From the first moment either side knew of the transaction: the server pushes the challenge
            // just before it answers the sign-in, so the frame may be read before the 202.
            let start = challenge == 0 ? f.mfaRequired : min(challenge, f.mfaRequired)
            approval.append(ms(start, f.session))
            if challenge != 0 { frameAfter202.append(ms(f.mfaRequired, challenge)) }
            if let (at, _) = answered[f.txn] { answerPath.append(ms(max(challenge, f.mfaRequired), at)) }
        }
        whole.sort()
        approval.sort()
        password.sort()
        frameAfter202.sort()
        answerPath.sort()
        var failures = [String: Int]()
        for f in flows where f.session == 0 { failures[f.failure ?? "unfinished", default: 0] += 1 }
        // The rate the sign-ins were started at (the first to the last request written).
        let starts = flows.map(\.requestWritten).filter { $0 != 0 }
        let achieved = starts.count > 1 ? Double(starts.count - 1) / (Double(starts.max()! - starts.min()!) / 1e9) : 0
        say(
            String(format: "sign-ins: %d of %d reached a session at %.1f/s", ok.count, total, achieved)
                + (failures.isEmpty
                    ? ""
                    : "; failed: "
                        + failures.sorted { $0.value > $1.value }.map { "\($0.value)x \($0.key)" }.joined(
                            separator: ", "
                        ))
        )
        say(
            String(
                format:
                    "password step (POST /v1/sessions → 202, one Argon2id m=19 MiB t=2 each) ms: p50 %.2f, p99 %.2f",
                pct(password, 50),
                pct(password, 99)
            )
        )
        say(
            String(
                format: "challenge frame read after the 202 ms: p50 %.2f, p99 %.2f (negative: before)",
                pct(frameAfter202, 50),
                pct(frameAfter202, 99)
            )
        )
        say(
            String(
                format: "answer (verify challenge, sign, POST answer → 200) ms: p50 %.2f, p99 %.2f",
                pct(answerPath, 50),
                pct(answerPath, 99)
            )
        )
        say(
            String(
                format:
                    "push approval (challenge or 202 → session 201) ms over %d: p50 %.2f, p90 %.2f, p99 %.2f, max %.2f",
                approval.count,
                pct(approval, 50),
                pct(approval, 90),
                pct(approval, 99),
                approval.last ?? .nan
            )
        )
        say(
            String(
                format: "whole sign-in (POST /v1/sessions → session 201) ms: p50 %.2f, p99 %.2f",
                pct(whole, 50),
                pct(whole, 99)
            )
        )
        let dropped = pushRecorder.state.withLock { $0.dropped }
        if !dropped.isEmpty || unexpected.value.load(ordering: .relaxed) > 0 {
            say(
                "unexpected: \(unexpected.value.load(ordering: .relaxed)) challenges that did not verify; connections dropped: \(dropped)"
            )
        }
        let met = pct(approval, 99) <= 25 && ok.count == total
        say(
            "goal: push approval p99 <= 25 ms with \(channels.count) connected authenticators: \(met ? "met" : "NOT met")"
        )
        for c in channels { c.close(promise: nil) }
        try? await group.shutdownGracefully()
        say(
            String(
                format:
                    "mfa: %d authenticators, push approval p50 %.1f ms, p99 %.1f ms; whole sign-in p50 %.1f ms, p99 %.1f ms at %.1f sign-ins/s, failed %d",
                channels.count,
                pct(approval, 50),
                pct(approval, 99),
                pct(whole, 50),
                pct(whole, 99),
                achieved,
                total - ok.count
            )
        )
    }
}
