import CountersignAPI
import CountersignCrypto
import CountersignServer
import FluentKit
import Foundation
import Logging

/// The fixtures of scripts/bench-mfa.sh, written before the server starts: COUNT accounts, each with one
/// authenticator paired the real way (a pairing key from MFAService, a signed pairing request, the
/// server's own pairing code). Only the accounts and their account sessions are copies of the first
/// one's records (the Argon2id hash is paid once, and a pairing key needs a freshly authenticated
/// session); each pairing runs from its own address, since pairing is rate limited per address.
enum MFASetup {
    static func run(dbPath: String, count: Int, dir: URL) async throws {
        let started = ContinuousClock.now
        try await Setup.withDatabase(dbPath) { database, config, logger in
            try await fill(database: database, config: config, logger: logger, count: count, dir: dir, started: started)
        }
    }

    private static func fill(
        database: any ServerStorage,
        config: ServerConfiguration,
        logger: Logger,
        count: Int,
        dir: URL,
        started: ContinuousClock.Instant
    ) async throws {
        // Filling a database before any server runs on it: the services as `serve` assembles them.
        let services = try await ServerServices.assemble(
            storage: database,
            config: config,
            clock: SystemClock(),
            random: SystemRandomSource(),
            logger: logger
        )
        let sessions = services.sessions
        let signIn = services.signIn
        let accounts = services.accounts
        let mfa = services.mfa
        let origin = RequestOrigin(address: "127.0.0.1", userAgent: "countersign-bench-mfa")

        let first = try await accounts.register(
            username: "mfauser-0",
            password: Setup.password,
            name: "MFA",
            lastname: "User",
            captcha: nil,
            origin: origin
        )
        let signedIn = try await signIn.completeSignIn(
            try await signIn.verifySignIn(
                username: "mfauser-0",
                password: Setup.password,
                captcha: nil,
                origin: origin
            )
        )
        guard
            let firstSession = try await database.session(
                tokenHash: Setup.tokenHash(signedIn.token)
            )
        else {
            throw SetupError("the first session was not stored")
        }

        // Accounts and sessions: copies of the first, in one transaction.
        let tokens = [signedIn.token] + (1..<count).map { _ in "cs_" + String(Setup.newToken().dropFirst(4)) }
        try await database.database.transaction { tx in
            let store = TransactionStores(database: tx, dialect: database.dialect)
            let now = Date()
            for i in 1..<count {
                var account = first
                account.id = UUID().uuidString.lowercased()
                account.username = "mfauser-\(i)"
                account.createdAt = now
                try await store.createAccount(account)
                var session = firstSession
                session.tokenHash = Setup.tokenHash(tokens[i])
                session.accountID = account.id
                session.createdAt = now
                session.lastUsedAt = now
                session.authenticatedAt = now
                session.expiresAt = now.addingTimeInterval(config.sessionLifetime)
                try await store.createSession(session)
            }
        }
        let copied = ContinuousClock.now

        // Pairing, through MFAService, a few at a time.
        let keys = await Setup.keys(count)
        let rows = try await withThrowingTaskGroup(of: [(Int, String)].self) { group in
            let workers = 8
            for w in 0..<workers {
                group.addTask {
                    var out: [(Int, String)] = []
                    for i in stride(from: w, to: count, by: workers) {
                        let auth = try await sessions.authenticate(token: tokens[i])
                        let pairing = try await mfa.pairingKey(auth, server: "http://bench.invalid")
                        let identity = keys[i].identity
                        let proof = try identity.signature(
                            for: DeviceProof.pairingMessage(
                                pairingKey: pairing.key,
                                signingKey: identity.publicKey,
                                encryptionKey: identity.publicKey
                            )
                        )
                        let info = try await mfa.pair(
                            PairingRequest(
                                pairingKey: pairing.key,
                                name: "bench authenticator \(i)",
                                signingKey: Base64URL(keys[i].spki),
                                encryptionKey: Base64URL(keys[i].spki),
                                signature: Base64URL(proof)
                            ),
                            origin: RequestOrigin(
                                address: "10.\(i >> 16 & 255).\(i >> 8 & 255).\(i & 255)",
                                userAgent: "countersign-bench-mfa"
                            )
                        )
                        guard let jwk = info.jwks.keys.first else {
                            throw SetupError("pairing answered no challenge key")
                        }
                        let pem = try identity.pem(passphrase: nil)
                        // username, device ID, device session token, private key (PKCS#8 PEM, base64), challenge key x, y
                        out.append(
                            (
                                i,
                                "\(info.username)\t\(info.deviceId)\t\(info.session.token)\t\(Data(pem.utf8).base64EncodedString())\t\(jwk.x)\t\(jwk.y)\n"
                            )
                        )
                    }
                    return out
                }
            }
            var all: [(Int, String)] = []
            for try await part in group { all += part }
            return all.sorted { $0.0 < $1.0 }.map(\.1)
        }
        try rows.joined().write(to: dir.appendingPathComponent("authenticators.tsv"), atomically: true, encoding: .utf8)
        print(
            "setup: \(count) accounts with a paired authenticator: copies \(secs(copied - started)) s, "
                + "pairing \(secs(ContinuousClock.now - copied)) s, total \(secs(ContinuousClock.now - started)) s"
        )
    }
}
