import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

@testable import CountersignClient

extension CrashSafetyTests {
    /// Open pairing keys an account may hold (docs/PROTOCOL.md §3).
    static let openPairingKeys = 3

    /// Authenticators pairing concurrently (three accounts, each with its three open pairing keys), killed
    /// mid-flight. After the restart a pairing is there whole or not at all: every acknowledged one is listed
    /// and its session works; every device of an account is one of its listed authenticators and the other
    /// way round; a key whose pairing is not listed is still open (spent with nothing to show for it is
    /// half-paired) and pairs now; and the three-open-keys limit counts exactly the keys left.
    @Test(arguments: ServeTests.backends)
    func pairingsKilledMidFlightAreWholeOrAbsent(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        var rng = Self.seeded("pairings \(kind)")
        var server = try Server(database: db, in: t.dir, environment: Self.roomy)
        struct Pairing {
            let account: Int
            let key: PairingKeyResponse
            let name: String
            let identity = Identity.generate()
        }
        var accounts: [MFATests.Account] = []
        var pairings: [Pairing] = []
        for a in 0..<3 {
            let account = try await MFATests.Account("pair\(a)", server: server.url)
            for k in 0..<Self.openPairingKeys {
                pairings.append(Pairing(account: a, key: try await account.sdk.createPairingKey(), name: "a\(a)k\(k)"))
            }
            await #expect(throws: ClientError.self, "at most \(Self.openPairingKeys) open keys") {
                try await account.sdk.createPairingKey()
            }
            accounts.append(account)
        }

        let acknowledged = Locked<[Int: CountersignAuthenticator]>([:])
        let burst = pairings.enumerated().map { i, p in
            Task {
                guard
                    let paired = try? await CountersignAuthenticator.pair(
                        p.key.uri,
                        server: nil,
                        name: p.name,
                        identity: p.identity
                    )
                else { return }
                acknowledged.withLock { $0[i] = paired.0 }
            }
        }
        try await Self.kill(
            server,
            after: Int.random(in: 1...4, using: &rng),
            jitter: .milliseconds(Int.random(in: 0...5, using: &rng))
        ) {
            acknowledged.withLock { $0.count }
        }
        for task in burst { await task.value }
        let acked = acknowledged.withLock { $0 }
        print("pairings \(kind): \(acked.count) of \(pairings.count) acknowledged before the kill")

        server = try Server(database: db, in: t.dir, environment: Self.roomy)
        defer { _ = server.signal(SIGTERM) }
        let url = URL(string: server.url)!
        var leftOver: [Int] = []
        for (a, account) in accounts.enumerated() {
            let sdk = CountersignClient(server: url, token: account.sdk.token)
            let listed = try await sdk.mfaStatus().authenticators
            let names = listed.map(\.name)
            #expect(Set(names).count == names.count, "a pairing is listed once: \(names)")
            #expect(
                Set(try await sdk.devices().map(\.name)) == Set(names),
                "every device paired is a listed authenticator and the other way round"
            )
            var open = 0
            for (i, p) in pairings.enumerated() where p.account == a {
                if let authenticator = acked[i] {
                    #expect(names.contains(p.name), "\(p.name): an acknowledged pairing was lost")
                    var state = authenticator.state
                    state.server = server.url
                    let info = try await CountersignAuthenticator(state: state, identity: p.identity).status()
                    #expect(info.name == p.name && info.deviceId == authenticator.state.deviceId)
                } else if !names.contains(p.name) {
                    open += 1
                    leftOver.append(i)
                }
            }
            // The keys not paired are the open ones: exactly the room left under the limit is free.
            for _ in open..<Self.openPairingKeys { _ = try await sdk.createPairingKey() }
            await #expect(throws: ClientError.self, "\(open) keys open after the restart, so no more than that") {
                try await sdk.createPairingKey()
            }
        }
        for i in leftOver {
            let p = pairings[i]
            var pairURL = URLComponents(string: p.key.uri)!
            pairURL.queryItems = pairURL.queryItems?.map {
                $0.name == "server" ? .init(name: "server", value: server.url) : $0
            }
            await #expect(throws: Never.self, "\(p.name): its key was spent without an authenticator") {
                _ = try await CountersignAuthenticator.pair(
                    pairURL.string!,
                    server: nil,
                    name: p.name,
                    identity: p.identity
                )
            }
        }
    }
}
