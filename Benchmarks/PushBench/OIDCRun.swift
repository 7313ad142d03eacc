import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// scripts/bench-oidc.sh's load (docs/PROTOCOL.md §6, issue "OpenID Connect provider" §5): ACCOUNTS accounts
/// registered and signed in, the client allowed once each; then, over keep-alive loopback connections,
/// (1) single sign-on round trips (authorization with the signed-in session and remembered consent → code →
/// token) at a low concurrency, timed whole; (2) CODES codes made; (3) every code exchanged at once,
/// CONCURRENCY in flight; (4) every refresh token those gave used once, the same way. Before the load, the
/// raw ES256 signing rate of this machine (one signature per ID token the server makes), on all cores.
struct OIDCRun {
    let host: String
    let port: Int
    let serverPID: Int32
    let clientID: String
    let secret: String
    let accounts: Int
    let codes: Int
    let concurrency: Int

    static let redirect = "https://app.bench.example/cb"

    func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    func rss() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(serverPID)/status", encoding: .utf8) else { return -1 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? -1
        }
        return -1
    }

    /// ES256 signatures per second on every core, over a JWT-sized input (header and claims of an ID token).
    static func signingRate(seconds: Double) async -> Double {
        let key = P256.Signing.PrivateKey()
        let input = Data(repeating: 0x61, count: 420)
        let cores = System.coreCount
        let counts = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<cores {
                group.addTask {
                    let end = Date().addingTimeInterval(seconds)
                    var n = 0
                    while Date() < end {
                        for _ in 0..<50 { _ = try? key.signature(for: input) }
                        n += 50
                    }
                    return n
                }
            }
            return await group.reduce(0, +)
        }
        return Double(counts) / seconds
    }

    static func form(_ fields: [String: String]) -> ByteBuffer {
        let unreserved = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
        )
        let text = fields.map {
            "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "")"
        }.joined(separator: "&")
        return ByteBuffer(string: text)
    }

    func tokenRequest(_ fields: [String: String], host: String) -> HTTPRequest {
        var r = HTTPRequest(method: .POST, path: "/oauth2/token", host: host, token: nil, json: Self.form(fields))
        r.head.headers.replaceOrAdd(name: "Content-Type", value: "application/x-www-form-urlencoded")
        r.head.headers.replaceOrAdd(
            name: "Authorization",
            value: "Basic " + Data("\(clientID):\(secret)".utf8).base64EncodedString()
        )
        return r
    }

    func authorizeRequest(session: String, host: String, consent: Bool) throws -> HTTPRequest {
        let parameters = [
            ["client_id", clientID], ["redirect_uri", Self.redirect], ["response_type", "code"],
            ["scope", "openid profile offline_access"], ["state", "s"], ["nonce", "n"],
        ]
        var body: [String: Any] = ["parameters": parameters]
        if consent { body["consent"] = true }
        return HTTPRequest(
            method: .POST,
            path: "/v1/oidc/authorizations",
            host: host,
            token: session,
            json: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body))
        )
    }

    static func json(_ reply: HTTPReply) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(reply.body.readableBytesView))) as? [String: Any] ?? [:]
    }

    static func code(_ reply: HTTPReply) -> String? {
        guard reply.status == 200, let location = json(reply)["location"] as? String else { return nil }
        return URLComponents(string: location)?.queryItems?.first { $0.name == "code" }?.value
    }

    /// Runs `work` for each of `items` with at most `width` in flight; returns each one's latency (ms) and
    /// result, and the wall time (s).
    static func flood<T: Sendable, R: Sendable>(
        _ items: [T],
        width: Int,
        _ work: @escaping @Sendable (T) async throws -> R
    ) async -> (latencies: [Double], results: [R?], seconds: Double) {
        let start = ContinuousClock.now
        var latencies = [Double](repeating: 0, count: items.count)
        var results = [R?](repeating: nil, count: items.count)
        await withTaskGroup(of: (Int, Double, R?).self) { group in
            var next = 0
            func add() {
                let i = next
                next += 1
                group.addTask {
                    let t = ContinuousClock.now
                    let r = try? await work(items[i])
                    let d = ContinuousClock.now - t
                    return (i, Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000, r)
                }
            }
            while next < min(width, items.count) { add() }
            for await (i, ms, r) in group {
                latencies[i] = ms
                results[i] = r
                if next < items.count { add() }
            }
        }
        let d = ContinuousClock.now - start
        return (latencies, results, Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    static func f(_ x: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", x) }

    func run() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        let hostHeader = "\(host):\(port)"
        let pool = HTTPPool(group: group, host: host, port: port, size: max(8, concurrency / 2))
        try await pool.open()
        defer { pool.close() }
        let idleRSS = rss()
        say("generator: \(System.coreCount) cores, \(accounts) accounts, \(codes) codes, \(concurrency) in flight")

        let signing = await Self.signingRate(seconds: 2)
        say("es256: \(Self.f(signing, 0)) signatures/s on \(System.coreCount) cores (this process, server idle)")

        // Accounts, signed in, each allowing the client once (the consent remembered from then on).
        var signedIn: [String] = []
        for i in 0..<accounts {
            let name = "oidcbench\(i)"
            let account: [String: Any] = [
                "username": name, "password": "correct horse battery", "name": "Bench", "lastname": "User",
            ]
            let json = { (o: [String: Any]) in ByteBuffer(bytes: try! JSONSerialization.data(withJSONObject: o)) }
            let reg = try await pool.send(
                HTTPRequest(method: .POST, path: "/v1/accounts", host: hostHeader, token: nil, json: json(account))
            ).get()
            guard reg.status == 201 || reg.status == 409 else {
                throw HTTPFailure(description: "registering \(name): \(reg.status)")
            }
            let signIn = try await pool.send(
                HTTPRequest(
                    method: .POST,
                    path: "/v1/sessions",
                    host: hostHeader,
                    token: nil,
                    json: json(["username": name, "password": "correct horse battery"])
                )
            ).get()
            guard signIn.status == 201, let token = Self.json(signIn)["token"] as? String else {
                throw HTTPFailure(description: "signing in \(name): \(signIn.status)")
            }
            let allowed = try await pool.send(try authorizeRequest(session: token, host: hostHeader, consent: true))
                .get()
            guard Self.code(allowed) != nil else { throw HTTPFailure(description: "consent for \(name) failed") }
            signedIn.append(token)
        }
        let sessions = signedIn

        // (1) Single sign-on round trips: authorization → code → token, 4 at a time.
        let ssoCount = 2_000
        let sso = await Self.flood(Array(0..<ssoCount), width: 4) { [self] i in
            let session = sessions[i % sessions.count]
            let answer = try await pool.send(try authorizeRequest(session: session, host: hostHeader, consent: false))
                .get()
            guard let code = Self.code(answer) else { throw HTTPFailure(description: "no code") }
            let tokens = try await pool.send(
                tokenRequest(
                    ["grant_type": "authorization_code", "code": code, "redirect_uri": Self.redirect],
                    host: hostHeader
                )
            ).get()
            guard tokens.status == 200 else { throw HTTPFailure(description: "token \(tokens.status)") }
            return true
        }
        let ssoFailed = sso.results.filter { $0 == nil }.count
        say(
            "sso: \(ssoCount) round trips (authorization with session and consent → code → token, 4 at a time): "
                + "p50 \(Self.f(Self.percentile(sso.latencies, 0.5), 2)) ms, p99 \(Self.f(Self.percentile(sso.latencies, 0.99), 2)) ms, "
                + "\(Self.f(Double(ssoCount) / sso.seconds, 0))/s, failed \(ssoFailed)"
        )

        // (2) Codes, made as fast as the server makes them (they live 60 s: the exchange follows at once).
        let made = await Self.flood(Array(0..<codes), width: concurrency) { [self] i in
            let answer = try await pool.send(
                try authorizeRequest(session: sessions[i % sessions.count], host: hostHeader, consent: false)
            ).get()
            guard let code = Self.code(answer) else { throw HTTPFailure(description: "no code: \(answer.status)") }
            return code
        }
        let codeList = made.results.compactMap { $0 }
        say(
            "authorizations: \(codeList.count) codes in \(Self.f(made.seconds, 2)) s (\(Self.f(Double(codeList.count) / made.seconds, 0))/s), "
                + "p50 \(Self.f(Self.percentile(made.latencies, 0.5), 2)) ms, p99 \(Self.f(Self.percentile(made.latencies, 0.99), 2)) ms"
        )

        // (3) Every code exchanged.
        let exchanged = await Self.flood(codeList, width: concurrency) { [self] code in
            let reply = try await pool.send(
                tokenRequest(
                    ["grant_type": "authorization_code", "code": code, "redirect_uri": Self.redirect],
                    host: hostHeader
                )
            ).get()
            guard reply.status == 200, let refresh = Self.json(reply)["refresh_token"] as? String else {
                throw HTTPFailure(description: "exchange \(reply.status)")
            }
            return refresh
        }
        let refreshTokens = exchanged.results.compactMap { $0 }
        let exchangeRate = Double(refreshTokens.count) / exchanged.seconds
        say(
            "code exchanges: \(refreshTokens.count) in \(Self.f(exchanged.seconds, 2)) s: \(Self.f(exchangeRate, 0))/s, "
                + "p50 \(Self.f(Self.percentile(exchanged.latencies, 0.5), 2)) ms, p99 \(Self.f(Self.percentile(exchanged.latencies, 0.99), 2)) ms, "
                + "failed \(codeList.count - refreshTokens.count)"
        )

        // (4) Every refresh token used once (each gives a new one and an ID token).
        let refreshed = await Self.flood(refreshTokens, width: concurrency) { [self] token in
            let reply = try await pool.send(
                tokenRequest(["grant_type": "refresh_token", "refresh_token": token], host: hostHeader)
            ).get()
            guard reply.status == 200 else { throw HTTPFailure(description: "refresh \(reply.status)") }
            return true
        }
        let refreshedCount = refreshed.results.compactMap { $0 }.count
        let refreshRate = Double(refreshedCount) / refreshed.seconds
        say(
            "refresh grants: \(refreshedCount) in \(Self.f(refreshed.seconds, 2)) s: \(Self.f(refreshRate, 0))/s, "
                + "p50 \(Self.f(Self.percentile(refreshed.latencies, 0.5), 2)) ms, p99 \(Self.f(Self.percentile(refreshed.latencies, 0.99), 2)) ms, "
                + "failed \(refreshTokens.count - refreshedCount)"
        )
        try await Task.sleep(for: .seconds(3))
        let afterRSS = rss()
        say("server rss: idle before \(idleRSS / 1024) MiB, idle after \(afterRSS / 1024) MiB")
        say(
            "oidc: code exchanges \(Self.f(exchangeRate, 0))/s (p99 \(Self.f(Self.percentile(exchanged.latencies, 0.99), 1)) ms), "
                + "refresh grants \(Self.f(refreshRate, 0))/s (p99 \(Self.f(Self.percentile(refreshed.latencies, 0.99), 1)) ms), "
                + "es256 \(Self.f(signing, 0))/s (exchange/signing \(Self.f(exchangeRate / signing, 3))), "
                + "sso p99 \(Self.f(Self.percentile(sso.latencies, 0.99), 1)) ms, rss idle \(idleRSS / 1024) MiB"
        )
    }
}
