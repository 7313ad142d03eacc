import Foundation

/// The checks of a batch of sends, as pure code over what the write transaction read: both stores
/// (SQLKit for PostgreSQL, the direct SQLite writer) read the same facts and write what this decides,
/// so every backend refuses and accepts exactly the same sends.
struct SendBatchPlan {
    /// An account named by a send (a recipient or the sender) with one of its active devices; `device`
    /// is nil for an account that has none (it still exists: its name is not unknown).
    struct AccountDevice {
        var accountID: String
        var username: String
        var device: (id: String, encryptionKeyID: String, signingKeyID: String)?
    }

    struct QueueRow {
        var deviceID: String
        var messageID: String
        var incoming: Bool
        var deliverAt: Date
        var expiresAt: Date
    }

    var outcomes: [StoreOutcome] = []
    /// The messages to insert, with their recipient device counts, in batch order.
    var messages: [MessageRecord] = []
    /// Their queue entries, in batch order, so each device's queue keeps the order sends were accepted in.
    var queue: [QueueRow] = []

    /// Every username the batch names (recipients and senders): the accounts the transaction must read.
    static func usernames(_ batch: [StoreRequest]) -> [String] {
        var seen = Set<String>()
        var names: [String] = []
        for r in batch {
            for name in r.message.recipients + [r.message.senderUsername] where seen.insert(name).inserted {
                names.append(name)
            }
        }
        return names
    }

    /// - Parameters:
    ///   - existing: the stored messages with IDs of this batch.
    ///   - accounts: every account of `usernames(batch)` that exists, with each of its active devices.
    init(batch: [StoreRequest], existing: [String: MessageRecord], accounts: [AccountDevice]) {
        var accountOf: [String: String] = [:]  // username → account ID
        var devicesOf: [String: [AccountDevice]] = [:]  // account ID → its active devices
        var signingKeyOf: [String: String] = [:]  // device ID → its signing key ID
        for a in accounts {
            accountOf[a.username] = a.accountID
            guard let d = a.device else { continue }
            devicesOf[a.accountID, default: []].append(a)
            signingKeyOf[d.id] = d.signingKeyID
        }
        var accepted: [String: MessageRecord] = [:]
        for r in batch {
            let m = r.message
            let unknown = m.recipients.filter { accountOf[$0] == nil }
            guard unknown.isEmpty else {
                outcomes.append(.unknownRecipients(unknown))
                continue
            }
            // The sender's account is among those read, so an active sending device is in the map.
            guard accountOf[m.senderUsername] == m.senderAccountID,
                signingKeyOf[m.senderDeviceID] == r.senderSigningKeyID
            else {
                outcomes.append(.senderChanged)
                continue
            }
            if let earlier = accepted[m.id] ?? existing[m.id] {
                outcomes.append(
                    earlier.digest == m.digest && earlier.senderAccountID == m.senderAccountID
                        ? .duplicate(earlier) : .idReused
                )
                continue
            }
            let accountIDs = Set(m.recipients.compactMap { accountOf[$0] } + [m.senderAccountID])
            let devices = accountIDs.flatMap { devicesOf[$0] ?? [] }.sorted { $0.device!.id < $1.device!.id }
            let current = Set(devices.map { $0.device!.encryptionKeyID })
            guard current == r.keyIDs else {
                let missing = devices.filter { !r.keyIDs.contains($0.device!.encryptionKeyID) }
                    .map {
                        DeviceKeyRefRecord(
                            username: $0.username,
                            deviceID: $0.device!.id,
                            encryptionKeyID: $0.device!.encryptionKeyID
                        )
                    }
                outcomes.append(.deviceMismatch(missing: missing, extra: r.keyIDs.subtracting(current).sorted()))
                continue
            }
            var record = m
            record.recipientDevices = devices.filter { $0.accountID != m.senderAccountID }.count
            accepted[m.id] = record
            messages.append(record)
            for d in devices {
                queue.append(
                    QueueRow(
                        deviceID: d.device!.id,
                        messageID: m.id,
                        incoming: d.accountID != m.senderAccountID,
                        deliverAt: m.deliverAt,
                        expiresAt: m.expiresAt
                    )
                )
            }
            outcomes.append(.stored(recipientDevices: record.recipientDevices, accounts: accountIDs.sorted()))
        }
    }
}
