import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Synchronization

/// The relay: accepts an envelope only from the device that signed it and only when it is sealed to
/// exactly the current devices of its recipients and of the sender; stores it once, queues it per device,
/// releases it when due (docs/DESIGN.md, "Messages"). It never holds a key that opens an envelope.
public final class MessageService: Sendable {
    let store: any MessageStore
    let accounts: AccountService
    let config: ServerConfiguration
    let clock: any WallClock
    let sends: AddressThrottle?
    let quota: MessageQuota

    /// Called with the accounts whose devices have a new entry due now (the push channel's wake-up).
    let onDue: @Sendable ([String]) -> Void
    /// Called with a message stored and due now (its devices' notifications).
    let onQueued: @Sendable (_ messageID: String) -> Void

    public static let maxDeliverAfter = 30 * 86_400
    /// How far ahead of the server's clock an envelope's `created` may be (the sender's clock may be fast,
    /// not by days): a message dated in the future would sort above every later one in its conversation.
    public static let maxCreatedSkew: TimeInterval = 5 * 60
    public static let maxRecipients = 64

    public init(
        store: any MessageStore,
        accounts: AccountService,
        config: ServerConfiguration,
        clock: any WallClock,
        onDue: @escaping @Sendable ([String]) -> Void = { _ in },
        onQueued: @escaping @Sendable (_ messageID: String) -> Void = { _ in }
    ) {
        self.store = store
        self.onDue = onDue
        self.onQueued = onQueued
        self.accounts = accounts
        self.config = config
        self.clock = clock
        sends = config.sendsPerAccount.map(AddressThrottle.init)
        quota = MessageQuota(limitBytes: config.messageQuotaBytes)
    }

    public func send(
        _ auth: DeviceAuthenticated,
        _ request: SendMessageRequest
    ) async throws -> (SentMessage, created: Bool) {
        try admitSend(auth)
        return try await store(try await SerialQueuePool.cpu.run { try self.check(auth, request) })
    }

    /// The account's send rate, checked before the body is read: a token per send attempt.
    public func admitSend(_ auth: DeviceAuthenticated) throws {
        guard let sends, let limit = config.sendsPerAccount else { return }
        if let wait = sends.take("account " + auth.account.id, now: clock.now()) {
            throw RelayError.sendRateLimited(
                perMinute: Int((Double(limit.capacity) * 60 / limit.window).rounded()),
                retryAfter: wait
            )
        }
    }

    /// A send that passed every check that needs no database: its record and the key IDs it is sealed to.
    public struct CheckedSend: Sendable {
        var record: MessageRecord
        var senderSigningKeyID: String
        var keyIDs: Set<String>
    }

    /// Every check of a send that needs no database, the ECDSA signature last. CPU-bound: call it off the
    /// event loops and the cooperative pool (`SerialQueuePool.cpu`).
    public func check(_ auth: DeviceAuthenticated, _ request: SendMessageRequest) throws -> CheckedSend {
        let delay = request.deliverAfter ?? 0
        guard (0...Self.maxDeliverAfter).contains(delay) else {
            throw RequestError.invalidField(
                field: "deliverAfter",
                reason: "0 to \(Self.maxDeliverAfter) seconds (30 days)"
            )
        }
        // Bounded before any per-name work: a body may hold a very long list.
        guard (1...Self.maxRecipients).contains(request.to.count) else {
            throw RequestError.invalidField(field: "to", reason: "1 to \(Self.maxRecipients) usernames")
        }
        var names: [String] = []
        var seen = Set<String>()
        for raw in request.to {
            guard let name = (try? Username(parsing: raw))?.text else {
                throw RequestError.invalidField(field: "to", reason: "usernames; \"\(raw.prefix(40))\" is not one")
            }
            if seen.insert(name).inserted { names.append(name) }
        }
        guard !names.isEmpty else {
            throw RequestError.invalidField(field: "to", reason: "1 to \(Self.maxRecipients) usernames")
        }
        let bytes = request.envelope.bytes
        guard bytes.count <= MessageEnvelope.maxSize else {
            throw RelayError.invalidEnvelope(
                "\(bytes.count) bytes; an envelope is at most \(MessageEnvelope.maxSize) (docs/SPEC.md §8.5)"
            )
        }
        let envelope: MessageEnvelope
        do {
            envelope = try MessageEnvelope(bytes: bytes)
        } catch {
            throw RelayError.invalidEnvelope("\(error)")
        }
        let signer = try PublicKey(spki: auth.device.signingKey)
        do {
            try envelope.verifySignature(from: signer)
        } catch {
            throw RelayError.forgedSender(
                "the envelope must be signed by this device's current signing key \(auth.device.signingKeyID): \(error)"
            )
        }
        // The recipients' names are resolved by the store, in the write transaction that checks their
        // devices: no read here, and no gap between the two.
        let now = clock.now()
        let created = Date(timeIntervalSince1970: TimeInterval(envelope.created) / 1000)
        guard created.timeIntervalSince(now) <= Self.maxCreatedSkew else {
            throw RelayError.invalidEnvelope(
                "its created time is \(Int(created.timeIntervalSince(now))) s ahead of the server's clock (at most \(Int(Self.maxCreatedSkew)) s); set the sending device's clock right and seal it again"
            )
        }
        // Retention counts from delivery: a message delayed by 30 days is kept 30 days after it is due.
        let deliverAt = now.addingTimeInterval(TimeInterval(delay))
        let record = MessageRecord(
            id: Hex.encode(envelope.messageID),
            senderAccountID: auth.account.id,
            senderDeviceID: auth.device.id,
            senderUsername: auth.account.username,
            recipients: names,
            envelope: bytes,
            digest: Hex.encode(SHA256.hash(data: bytes)),
            acceptedAt: now,
            deliverAt: deliverAt,
            expiresAt: deliverAt.addingTimeInterval(config.messageRetention),
            recipientDevices: 0,
            fetchedBy: 0,
            acknowledgedBy: 0,
            cancelled: false
        )
        return CheckedSend(
            record: record,
            senderSigningKeyID: auth.device.signingKeyID,
            keyIDs: Set(envelope.recipients.map { Hex.encode($0.bytes) })
        )
    }

    /// Stores a checked send through the store's group commit; the store re-checks the sender and the
    /// device set inside its write transaction.
    public func store(_ send: CheckedSend) async throws -> (SentMessage, created: Bool) {
        let record = send.record
        let size = Int64(record.envelope.count)
        do {
            try await quota.admit(accountID: record.senderAccountID, size: size, now: record.acceptedAt) {
                try await self.store.storedBytes(senderAccountID: record.senderAccountID, now: record.acceptedAt)
            }
        } catch RelayError.quotaExceeded(let limit, let wait) {
            // A retry of a send that was stored (and filled the quota) is still answered as the duplicate it is.
            if let earlier = try await store.message(id: record.id), earlier.digest == record.digest,
                earlier.senderAccountID == record.senderAccountID
            {
                return (
                    SentMessage(
                        id: record.id,
                        acceptedAt: earlier.acceptedAt,
                        deliverAt: earlier.deliverAt,
                        recipientDevices: earlier.recipientDevices
                    ), false
                )
            }
            throw RelayError.quotaExceeded(limitBytes: limit, retryAfter: wait)
        }
        let outcome: StoreOutcome
        do {
            outcome = try await self.store.submit(
                StoreRequest(message: record, senderSigningKeyID: send.senderSigningKeyID, keyIDs: send.keyIDs)
            )
        } catch {
            quota.finish(accountID: record.senderAccountID, size: size, stored: false)
            throw error
        }
        if case .stored = outcome {
            quota.finish(accountID: record.senderAccountID, size: size, stored: true)
        } else {
            quota.finish(accountID: record.senderAccountID, size: size, stored: false)
        }
        switch outcome {
        case .stored(let n, let accounts):
            // Due now: wake the devices of every account involved (delayed ones are the scheduler's).
            if record.deliverAt <= record.acceptedAt {
                onDue(accounts)
                onQueued(record.id)
            }
            return (
                SentMessage(
                    id: record.id,
                    acceptedAt: record.acceptedAt,
                    deliverAt: record.deliverAt,
                    recipientDevices: n
                ), true
            )
        case .duplicate(let earlier):
            return (
                SentMessage(
                    id: record.id,
                    acceptedAt: earlier.acceptedAt,
                    deliverAt: earlier.deliverAt,
                    recipientDevices: earlier.recipientDevices
                ), false
            )
        case .idReused:
            throw RelayError.messageIDReused
        case .unknownRecipients(let unknown):
            throw RelayError.unknownRecipients(unknown)
        case .senderChanged:
            throw RelayError.senderRevoked
        case .deviceMismatch(let missing, let extra):
            throw RelayError.deviceMismatch(
                missing: missing.map {
                    DeviceKeyRef(username: $0.username, deviceId: $0.deviceID, encryptionKeyId: $0.encryptionKeyID)
                },
                extra: extra.map { DeviceKeyRef(username: nil, deviceId: nil, encryptionKeyId: $0) }
            )
        }
    }

    public func fetch(_ auth: DeviceAuthenticated, after: Int64, limit: Int) async throws -> MessagePage {
        try await page(
            deviceID: auth.device.id,
            after: after,
            excluding: [],
            limit: limit,
            maxBytes: 8 << 20,
            recordFetch: true
        )
    }

    func page(
        deviceID: String,
        after: Int64,
        excluding: [Int64],
        limit: Int,
        maxBytes: Int,
        recordFetch: Bool
    ) async throws -> MessagePage {
        let (entries, more) = try await store.fetch(
            deviceID: deviceID,
            after: after,
            excluding: excluding,
            limit: max(1, min(limit, 100)),
            maxBytes: maxBytes,
            now: clock.now(),
            recordFetch: recordFetch
        )
        let messages = entries.map { e in
            QueuedMessage(
                seq: e.seq,
                id: e.message.id,
                direction: e.incoming ? "incoming" : "outgoing",
                from: e.message.senderUsername,
                fromDevice: e.message.senderDeviceID,
                to: e.message.recipients,
                envelope: Base64URL(e.message.envelope),
                acceptedAt: e.message.acceptedAt,
                deliverAt: e.message.deliverAt
            )
        }
        return MessagePage(messages: messages, next: more ? messages.last?.seq : nil)
    }

    public func acknowledge(_ auth: DeviceAuthenticated, seqs: [Int64]) async throws -> Int {
        guard seqs.count <= 1000 else {
            throw RequestError.invalidField(field: "seqs", reason: "at most 1000 positions per request")
        }
        return try await store.acknowledge(deviceID: auth.device.id, seqs: seqs)
    }

    /// The push channel's acknowledgements (already merged and bounded by the channel).
    func acknowledge(deviceID: String, seqs: [Int64]) async throws {
        _ = try await store.acknowledge(deviceID: deviceID, seqs: seqs)
    }

    public func cancel(_ auth: DeviceAuthenticated, messageID: String) async throws {
        switch try await store.cancel(
            messageID: messageID.lowercased(),
            senderAccountID: auth.account.id,
            now: clock.now()
        ) {
        case .cancelled:
            quota.forget(accountID: auth.account.id)
            return
        case .notFound: throw RelayError.notFound
        case .alreadyDelivered: throw RelayError.alreadyDelivered
        }
    }

    public func status(_ auth: DeviceAuthenticated, messageID: String) async throws -> MessageStatus {
        guard let m = try await store.message(id: messageID.lowercased()), m.senderAccountID == auth.account.id else {
            throw RelayError.notFound
        }
        return MessageStatus(
            id: m.id,
            to: m.recipients,
            acceptedAt: m.acceptedAt,
            deliverAt: m.deliverAt,
            recipientDevices: m.recipientDevices,
            fetchedBy: m.fetchedBy,
            acknowledgedBy: m.acknowledgedBy,
            cancelled: m.cancelled
        )
    }
}
