import CountersignAPI
import CountersignCrypto
import CountersignServer
import Crypto
import FluentKit
import Foundation
import Logging

/// The fixtures, written straight into the database before the server starts: creating 10,000 accounts
/// through the API would cost an Argon2id hash each.
enum Setup {
    static let password = "correct horse battery staple"

    /// `TokenHash.hex` (internal to the server): hex SHA-256 of the token's UTF-8.
    static func tokenHash(_ token: String) -> String { Hex.encode(SHA256.hash(data: Array(token.utf8))) }

    /// A `csd_` token as the server makes them: 32 random bytes, unpadded base64url.
    static func newToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return "csd_" + Base64URL((0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }).text
    }

    struct Key: Sendable {
        let identity: Identity
        let spki: [UInt8]
        /// As DeviceService.register computes key IDs: hex of the SPKI fingerprint.
        let keyID: String
        init(_ identity: Identity) {
            self.identity = identity
            spki = identity.publicKey.spkiDER
            keyID = Hex.encode(identity.publicKey.fingerprint.bytes)
        }
    }

    struct Row: Sendable {
        let username: String
        let accountID: String
        let deviceID: String
        let token: String
        let key: Key
    }

    static func keys(_ count: Int) async -> [Key] {
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        return await withTaskGroup(of: (Int, [Key]).self) { group in
            for w in 0..<workers {
                let n = count / workers + (w < count % workers ? 1 : 0)
                group.addTask { (w, (0..<n).map { _ in Key(Identity.generate()) }) }
            }
            var parts = [[Key]](repeating: [], count: workers)
            for await (w, part) in group { parts[w] = part }
            return parts.flatMap { $0 }
        }
    }

    static func run(dbPath: String, conns: Int, senders: Int, dir: URL) async throws {
        let started = ContinuousClock.now
        try await withDatabase(dbPath) { database, config, logger in
            try await fill(
                database: database,
                config: config,
                logger: logger,
                conns: conns,
                senders: senders,
                dir: dir,
                started: started
            )
        }
    }

    /// The SQLite file opened with the server library (migrations included) and the server's default
    /// configuration (captcha off), closed after `body` whatever happens.
    static func withDatabase(
        _ dbPath: String,
        _ body: (any ServerStorage, ServerConfiguration, Logger) async throws -> Void
    ) async throws {
        var logger = Logger(label: "countersign-bench-push")
        logger.logLevel = .warning
        var config = ServerConfiguration()
        config.captcha = .off
        config.database = .sqlite(path: dbPath)
        let database = try await ServerDatabase.open(config.database, logger: logger)
        do {
            try await body(database, config, logger)
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }

    private static func fill(
        database: any ServerStorage,
        config: ServerConfiguration,
        logger: Logger,
        conns: Int,
        senders: Int,
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
        let devices = services.devices
        let origin = RequestOrigin(address: "127.0.0.1", userAgent: "countersign-bench-push")

        // One account, device and device session the way the API makes them: the one password hash, and
        // records whose copies (new IDs, keys, tokens) make all the others.
        let firstKey = Key(Identity.generate())
        let firstAccount = try await accounts.register(
            username: "pushsender-0",
            password: password,
            name: "Push",
            lastname: "Sender",
            captcha: nil,
            origin: origin
        )
        let signedIn = try await signIn.completeSignIn(
            try await signIn.verifySignIn(
                username: "pushsender-0",
                password: password,
                captcha: nil,
                origin: origin
            )
        )
        let auth = try await sessions.authenticate(token: signedIn.token)
        let challenge = try await devices.registrationChallenge(auth)
        let proof = try firstKey.identity.signature(
            for: DeviceProof.registrationMessage(
                challenge: challenge.challenge.bytes,
                accountID: firstAccount.id,
                signingKey: firstKey.identity.publicKey,
                encryptionKey: firstKey.identity.publicKey
            )
        )
        let firstDevice = try await devices.register(
            auth,
            DeviceRegistrationRequest(
                name: "bench",
                signingKey: Base64URL(firstKey.spki),
                encryptionKey: Base64URL(firstKey.spki),
                challenge: challenge.challenge,
                signature: Base64URL(proof)
            ),
            origin: origin
        )
        let nonce = try await devices.sessionChallenge(deviceID: firstDevice.id, origin: origin)
        let sessionProof = try firstKey.identity.signature(
            for: DeviceProof.sessionMessage(nonce: nonce.challenge.bytes, deviceID: firstDevice.id)
        )
        let (firstToken, firstSession, _, _) = try await devices.openSession(
            DeviceSessionRequest(deviceId: firstDevice.id, nonce: nonce.challenge, signature: Base64URL(sessionProof)),
            origin: origin
        )
        let templated = ContinuousClock.now

        let keys = await keys(conns + senders - 1)
        let keyed = ContinuousClock.now
        func row(_ username: String, _ key: Key) -> Row {
            Row(
                username: username,
                accountID: UUID().uuidString.lowercased(),
                deviceID: UUID().uuidString.lowercased(),
                token: newToken(),
                key: key
            )
        }
        let senderRows =
            [
                Row(
                    username: "pushsender-0",
                    accountID: firstAccount.id,
                    deviceID: firstDevice.id,
                    token: firstToken,
                    key: firstKey
                )
            ]
            + (1..<senders).map { row("pushsender-\($0)", keys[conns + $0 - 1]) }
        let deviceRows = (0..<conns).map { row("pushdev-\($0)", keys[$0]) }
        let inserts = Array(senderRows.dropFirst()) + deviceRows

        let maxActive = config.maxDevicesPerAccount
        let lifetime = config.deviceSessionLifetime
        try await database.database.transaction { tx in
            let accountStore = TransactionStores(database: tx, dialect: database.dialect)
            let deviceStore = accountStore
            let now = Date()
            for r in inserts {
                var account = firstAccount
                account.id = r.accountID
                account.username = r.username
                account.createdAt = now
                try await accountStore.createAccount(account)
                var device = firstDevice
                device.id = r.deviceID
                device.accountID = r.accountID
                device.signingKey = r.key.spki
                device.signingKeyID = r.key.keyID
                device.encryptionKey = r.key.spki
                device.encryptionKeyID = r.key.keyID
                device.createdAt = now
                device.keysSince = now
                device.lastSeenAt = nil
                let written = try await deviceStore.addDevice(device, proof: nil, maxActive: maxActive)
                guard written == .done else { throw SetupError("adding device of \(r.username): \(written)") }
                var session = firstSession
                session.tokenHash = tokenHash(r.token)
                session.deviceID = r.deviceID
                session.accountID = r.accountID
                session.createdAt = now
                session.lastUsedAt = now
                session.expiresAt = now.addingTimeInterval(lifetime)
                try await deviceStore.createDeviceSession(session)
            }
        }
        let inserted = ContinuousClock.now

        // username, device ID, token, encryption key (SPKI, base64url)
        var lines = ""
        lines.reserveCapacity(deviceRows.count * 200)
        for r in deviceRows { lines += "\(r.username)\t\(r.deviceID)\t\(r.token)\t\(Base64URL(r.key.spki).text)\n" }
        try lines.write(to: dir.appendingPathComponent("devices.tsv"), atomically: true, encoding: .utf8)
        // username, token, private key (unencrypted PKCS#8 PEM, base64)
        var senderLines = ""
        for r in senderRows {
            let pem = try r.key.identity.pem(passphrase: nil)
            senderLines += "\(r.username)\t\(r.token)\t\(Data(pem.utf8).base64EncodedString())\n"
        }
        try senderLines.write(to: dir.appendingPathComponent("senders.tsv"), atomically: true, encoding: .utf8)
        print(
            "setup: \(conns) device accounts + \(senders) senders: first account through the services \(secs(templated - started)) s, "
                + "\(conns + senders - 1) keys \(secs(keyed - templated)) s, insert \(secs(inserted - keyed)) s, total \(secs(ContinuousClock.now - started)) s"
        )
    }
}

struct SetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func secs(_ d: Duration) -> String {
    String(format: "%.2f", Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
}

/// The stores' shared statements inside one transaction: the setup's bulk inserts commit once.
struct TransactionStores: SQLStores {
    let database: any Database
    let dialect: StorageDialect
    var reader: any Database { database }
}
