import CountersignAPI
import CountersignCrypto
import Foundation

extension CountersignClient {
    /// Seals `plaintext` to every active device of every recipient and of this account (so the sender's
    /// other devices, and this one, can read it later), signs it with `signing`, and sends it.
    ///
    /// `check` sees each user's directory before anything is sealed to it; a client that pins keys
    /// (TOFU) throws there when a device set changed. When the server answers 409 `device-mismatch`
    /// (a device was added or revoked meanwhile), the directories are fetched again, checked again,
    /// and the message sealed and sent once more.
    ///
    /// An empty text is refused (`ClientError.sealing`); a recipient named twice (in any case) is sent to
    /// once; naming this account itself is allowed (a note to its own devices, which every message reaches).
    public func sendMessage(
        _ plaintext: [UInt8],
        to recipients: [String],
        from username: String,
        signing: Identity,
        deliverAfter: Int? = nil,
        now: Date = Date(),
        check: (UserDirectory) throws -> Void = { _ in },
        report: (MessageEnvelope.Step) -> Void = { _ in }
    ) async throws -> SentMessage {
        guard !plaintext.isEmpty else { throw ClientError.sealing("the message is empty") }
        var named: [String] = []
        for r in recipients.map({ $0.lowercased() }) where !named.contains(r) { named.append(r) }
        var users = named
        if !users.contains(username.lowercased()) { users.append(username.lowercased()) }
        for attempt in 0..<2 {
            var keys: [PublicKey] = []
            for user in users {
                let directory = try await directory(username: user)
                try check(directory)
                // Whatever `check` does: an encryption key its device's signing key never chose is not sealed
                // to (docs/PROTOCOL.md §1.3).
                do { try KeyPins.requireKeysProven(directory) } catch let e as PinError {
                    throw ClientError.untrustedDevices(username: user, detail: e.description)
                }
                for d in directory.devices {
                    do {
                        keys.append(try PublicKey(spki: d.encryptionKey.bytes))
                    } catch {
                        throw ClientError.sealing(
                            "\(user)'s device \(d.id) has a key that is not a P-256 SPKI: \(error)"
                        )
                    }
                }
            }
            let envelope: MessageEnvelope
            do {
                envelope = try MessageEnvelope.seal(plaintext, from: signing, to: keys, created: now, report: report)
            } catch {
                throw ClientError.sealing("\(error)")
            }
            let request = SendMessageRequest(to: named, envelope: Base64URL(envelope.bytes), deliverAfter: deliverAfter)
            do {
                let sent = try await send(
                    "POST",
                    "/v1/messages",
                    body: request,
                    as: SentMessage.self,
                    credential: .device
                )
                // The ID is the envelope's own (signed); anything else is not this message (and a client
                // may name files after it).
                guard sent.id == Hex.encode(envelope.messageID) else {
                    throw ClientError.unexpectedResponse(
                        status: 201,
                        detail:
                            "the server named the message \(sent.id.prefix(40).debugDescription), not its envelope's ID"
                    )
                }
                return sent
            } catch ClientError.problem(let p) where p.kind == .deviceMismatch && attempt == 0 {
                continue
            }
        }
        throw ClientError.unexpectedResponse(status: 409, detail: "the recipients' devices kept changing; try again")
    }

    /// One page of this device's queue: due messages it has not acknowledged, oldest first. Start at 0;
    /// pass the page's `next` for more. Entries stay until acknowledged, so a crash loses nothing.
    /// `wait` (1 to 30 seconds) long-polls: with nothing due, the answer comes when something is.
    public func fetchMessages(after: Int64 = 0, limit: Int = 100, wait: Int = 0) async throws -> MessagePage {
        try await longPoll(
            "/v1/devices/current/messages?after=\(after)&limit=\(limit)",
            wait: wait,
            as: MessagePage.self,
            credential: .device,
            limits: .messagePage(wait: wait)
        )
    }

    /// Tells the server these queue entries are stored on the device; it deletes them.
    @discardableResult
    public func acknowledge(_ seqs: [Int64]) async throws -> Int {
        try await send(
            "POST",
            "/v1/devices/current/acks",
            body: AckRequest(seqs: seqs),
            as: AckResult.self,
            credential: .device
        ).acknowledged
    }

    /// Cancels a delayed message before it is delivered.
    public func cancelMessage(id: String) async throws {
        try await send("DELETE", "/v1/messages/\(try Self.segment(id))", credential: .device)
    }

    /// Delivery state and receipts of a message this account sent.
    public func messageStatus(id: String) async throws -> MessageStatus {
        try await send("GET", "/v1/messages/\(try Self.segment(id))", as: MessageStatus.self, credential: .device)
    }
}
