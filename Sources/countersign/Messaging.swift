import ArgumentParser
import CountersignClient
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Stored messages as `messages/<id>.json` (0600) in the config directory keeps them (the SDK's
/// `ConfigDirectory`), found and listed for the commands.
extension StoredMessage {
    static func url(_ id: String) -> URL { PrivateFiles.store.messageURL(id: id) }

    static func load(_ id: String) throws -> StoredMessage? { try PrivateFiles.store.message(id: id) }
    func save() throws { try PrivateFiles.store.save(self) }

    /// Every stored message, oldest first. A file that cannot be read is skipped with a warning naming it,
    /// so one damaged file does not hide all the others.
    static func all() throws -> [StoredMessage] {
        PrivateFiles.store.messageIDs()
            .compactMap { id -> StoredMessage? in
                do {
                    return try load(id)
                } catch {
                    Terminal.warn("warning: skipped \(Terminal.printable("\(error)"))")
                    return nil
                }
            }
            .sorted { ($0.sentAt, $0.id) < ($1.sentAt, $1.id) }
    }

    /// For `validate()`: `text` can name a message (4 to 32 hex digits).
    static func checkPrefix(_ text: String) throws {
        let wanted = text.lowercased()
        guard wanted.utf8.count >= 4, wanted.utf8.count <= 32,
            wanted.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else {
            throw ValidationError(
                "\"\(Terminal.printable(String(text.prefix(40))))\" is not a message ID (32 hex digits, or the first few of them)"
            )
        }
    }

    /// The message whose ID is `text` or starts with it (at least 4 hex digits).
    static func find(_ text: String) throws -> StoredMessage {
        try checkPrefix(text)
        let wanted = text.lowercased()
        let matches = PrivateFiles.store.messageIDs().filter { $0.hasPrefix(wanted) }
        guard matches.count <= 1 else {
            throw CLIError.usage("\(wanted) is the start of \(matches.count) message IDs; give more of it")
        }
        guard let id = matches.first, let message = try load(id) else {
            throw CLIError.usage("no message \(wanted) on this device; run `countersign inbox` to fetch new messages")
        }
        return message
    }
}

/// `countersign send`.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Seal a text to every device of the recipients (and of your account), sign it, and send it.",
        discussion: """
            TEXT is the message (put -- before one that starts with a dash); - or nothing reads it from standard \
            input (UTF-8, at most 1 MiB). The first message to someone pins their devices (trust on first use); \
            if their devices change later, nothing is sent until you run `countersign trust USER`.
            """
    )

    @Option(name: .long, help: ArgumentHelp("A recipient's username (repeat for more).", valueName: "user"))
    var to: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Hold the message on the server this long first: 15s, 2m, 1h, 1d (at most 30d).",
            valueName: "duration"
        )
    )
    var after: String?

    @Flag(name: .long, help: "Report each step on standard error.")
    var verbose = false

    @OptionGroup var keyOptions: PrivateKeyOptions

    @Argument(help: ArgumentHelp("The message text; - or nothing for standard input.", valueName: "text"))
    var text: String?

    func validate() throws {
        if to.isEmpty { throw ValidationError("name at least one recipient with --to USER") }
        for user in to { try AccountCommand.validate(username: user.lowercased()) }
        if let after { _ = try Self.seconds(after) }
        if let text, text != "-", Self.isEmpty(Array(text.utf8)) { throw Self.empty }
    }

    /// Nothing, or only spaces and line breaks: nothing anyone would read.
    static func isEmpty(_ text: [UInt8]) -> Bool { text.allSatisfy { [0x20, 0x09, 0x0a, 0x0d].contains($0) } }
    static var empty: ValidationError {
        ValidationError("the message is empty; nothing was sent: give the text as an argument, or on standard input")
    }

    /// Each recipient once, in the order named; a name given twice (in any case) is said once.
    static func recipients(_ named: [String]) -> [String] {
        var out: [String] = []
        for user in named.map({ $0.lowercased() }) {
            if out.contains(user) {
                Terminal.warn("note: \(user) is named twice; sending once")
            } else {
                out.append(user)
            }
        }
        return out
    }

    /// `15s`, `2m`, `1h`, `1d` or plain seconds, 0 to 30 days.
    static func seconds(_ text: String) throws -> Int {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var digits = Substring(text)
        var unit = 1
        if let last = text.last, let u = units[last] {
            unit = u
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.count <= 8, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(digits),
            n * unit <= 30 * 86_400
        else {
            throw ValidationError("--after takes a duration from 0 to 30 days, like 15s, 2m, 1h or 1d; not \(text)")
        }
        return n * unit
    }

    func run() async throws {
        let plaintext = try readText()
        if Self.isEmpty(plaintext) { throw Self.empty }
        let recipients = Self.recipients(to)
        let context = try DeviceContext(keyOptions: keyOptions)
        let me = try context.currentIdentity()
        let myKeyID = Hex.encode(me.publicKey.fingerprint.bytes)
        guard myKeyID == context.device.keyID else {
            throw CLIError.io("\(context.device.keyPath) does not hold the key its name says")
        }
        var book = try Pins.book()
        var firstContacts: [String: [PinnedDevice]] = [:]
        if recipients.contains(context.username.lowercased()) {
            // Allowed: a note to yourself. Every message goes to the sender's own devices anyway; naming
            // yourself only lists you among the recipients.
            Terminal.warn(
                "note: you are sending to yourself: the message goes to your account's devices (this one included), as every message you send does"
            )
        }
        let now = Date()
        let sent: SentMessage
        do {
            sent = try await context.withSession {
                firstContacts = [:]
                return try await context.client.sendMessage(
                    plaintext,
                    to: recipients,
                    from: context.username,
                    signing: me,
                    deliverAfter: try after.map(Self.seconds),
                    now: now,
                    check: {
                        try Pins.checkBeforeSending(
                            &book,
                            $0,
                            me: context.device,
                            myKeyID: myKeyID,
                            now: now,
                            firstContacts: &firstContacts
                        )
                    },
                    report: { if verbose { Terminal.warn($0.rawValue) } }
                )
            }
        } catch let e as ClientError where e.code == .unknownRecipient {
            throw CLIError.usage("nothing was sent: \(e)")
        } catch let e as ClientError where e.code == .notFound {
            // The directory lookup failed: name who is missing.
            var missing: [String] = []
            for user in recipients where !missing.contains(user) {
                if case ClientError.problem(let p)? = await Self.failure(of: {
                    _ = try await context.client.directory(username: user)
                }), p.kind == .notFound {
                    missing.append(user)
                }
            }
            throw CLIError.usage(
                "nothing was sent: there is no user \(missing.isEmpty ? "among the recipients" : missing.joined(separator: ", ")) on \(context.device.server)"
            )
        }
        for (user, devices) in firstContacts.sorted(by: { $0.key < $1.key }) {
            book.pin(user, devices, now: now)
            if user == context.username.lowercased() {
                if !devices.isEmpty {
                    Terminal.warn(
                        "pinned your account's \(devices.count) other device\(devices.count == 1 ? "" : "s"): "
                            + devices.map(\.label).joined(separator: "; ")
                    )
                }
            } else {
                Terminal.warn(
                    "first message to \(user): pinned \(devices.count) device\(devices.count == 1 ? "" : "s") (trust on first use): "
                        + devices.map(\.label).joined(separator: "; ")
                        + "; compare `countersign safety-number \(user)` with \(user) to be sure"
                )
            }
        }
        try book.save()
        // Recorded as sent now; the copy the server queues for this device brings the envelope. (The SDK
        // checked that the ID is the envelope's; it names a file.)
        guard StoredMessage.isID(sent.id) else {
            throw CLIError.io("the server answered with a message ID that is not 32 hex digits")
        }
        if (try? StoredMessage.load(sent.id)) == nil {
            try? StoredMessage(
                id: sent.id,
                direction: "outgoing",
                from: context.username,
                fromDevice: context.device.deviceId,
                to: recipients,
                sentAt: now,
                acceptedAt: sent.acceptedAt,
                deliverAt: sent.deliverAt,
                envelope: nil,
                read: true,
                readAt: nil
            ).save()
        }
        let delivery =
            sent.deliverAt > sent.acceptedAt.addingTimeInterval(0.5)
            ? "delivered at \(PrivateFiles.date(sent.deliverAt))" : "delivered now"
        // The server counts the recipients' devices other than the sender's own; a note to yourself has none.
        let devices =
            recipients == [context.username.lowercased()]
            ? "a note to yourself: your own devices only"
            : "\(sent.recipientDevices) device\(sent.recipientDevices == 1 ? "" : "s")"
        print("sent \(sent.id) to \(recipients.joined(separator: ", ")) (\(devices)); \(delivery)")
    }

    static func failure(of call: () async throws -> Void) async -> ClientError? {
        do {
            try await call()
            return nil
        } catch { return error as? ClientError }
    }

    private func readText() throws -> [UInt8] { try MessageText.read(text) }
}

/// Fetching this device's queue into `messages/` with the SDK's `Mailbox`, and listing what is stored.
enum Inbox {
    /// Fetches every due message, stores each envelope, and only then acknowledges it (`Mailbox.sync`).
    /// Returns the IDs newly stored.
    static func sync(_ context: DeviceContext) async throws -> [String] {
        try await Mailbox(store: PrivateFiles.store).sync(
            fetch: { cursor in
                try await context.withSession { try await context.client.fetchMessages(after: cursor, limit: 100) }
            },
            acknowledge: { seqs in _ = try await context.withSession { try await context.client.acknowledge(seqs) } },
            report: report
        )
    }

    /// Says on standard error what `Mailbox` dropped or replaced.
    static func report(_ event: Mailbox<ConfigDirectory>.Event) {
        switch event {
        case .dropped(let drop): Terminal.warn("warning: \(drop)")
        case .replacingDamaged(let id, let error):
            Terminal.warn(
                "warning: replacing \(StoredMessage.url(id).path) with the server's copy: \(Terminal.printable("\(error)"))"
            )
        }
    }

    /// One row per message, or one JSON array.
    static func list(_ messages: [StoredMessage], json: Bool, receipts: [String: MessageStatus] = [:]) throws {
        if json {
            let rows: [[String: Any]] = messages.map { m in
                var row: [String: Any] = [
                    "id": m.id, "direction": m.direction, "peer": m.peer, "from": m.from, "to": m.to,
                    "sentAt": PrivateFiles.date(m.sentAt), "acceptedAt": PrivateFiles.date(m.acceptedAt),
                    "deliverAt": PrivateFiles.date(m.deliverAt), "read": m.read, "delivered": m.envelope != nil,
                ]
                if let r = receipts[m.id] {
                    row["receipts"] = [
                        "recipientDevices": r.recipientDevices, "fetchedBy": r.fetchedBy,
                        "acknowledgedBy": r.acknowledgedBy, "cancelled": r.cancelled,
                    ]
                }
                return row
            }
            try Terminal.printJSON(rows)
            return
        }
        for m in messages {
            var columns = [
                m.id, m.incoming ? "in " : "out",
                Terminal.printable(m.peer).padding(toLength: 12, withPad: " ", startingAt: 0),
                PrivateFiles.date(m.sentAt), m.read ? "read  " : "unread",
            ]
            if !m.incoming {
                if let r = receipts[m.id] {
                    columns[4] =
                        r.cancelled
                        ? "cancelled"
                        : "fetched \(r.fetchedBy)/\(r.recipientDevices), stored \(r.acknowledgedBy)/\(r.recipientDevices)"
                            + (r.deliverAt > Date() ? ", due \(PrivateFiles.date(r.deliverAt))" : "")
                } else {
                    columns[4] = m.deliverAt > Date() ? "due \(PrivateFiles.date(m.deliverAt))" : "sent"
                }
            }
            print(columns.joined(separator: "  "))
        }
    }
}

/// `countersign inbox`.
struct InboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inbox",
        abstract: "Fetch new messages and list the ones you received.",
        discussion: """
            Envelopes are kept sealed in messages/ in the config directory; `countersign read ID` opens one. \
            The date is the sender's own (signed) clock.
            """
    )

    @Flag(name: .long, help: "Print one JSON array (id, direction, peer, sentAt, acceptedAt, read, …).") var json =
        false
    @OptionGroup var keyOptions: PrivateKeyOptions

    func run() async throws {
        let context = try DeviceContext(keyOptions: keyOptions)
        let fresh = try await Inbox.sync(context)
        let incoming = try StoredMessage.all().filter(\.incoming)
        if !json {
            Terminal.warn(
                fresh.isEmpty ? "no new messages" : "\(fresh.count) new message\(fresh.count == 1 ? "" : "s")"
            )
            if incoming.isEmpty { print("no messages") }
        }
        try Inbox.list(incoming, json: json)
    }
}

/// `countersign outbox`.
struct OutboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox",
        abstract: "List the messages your account sent, with delivery receipts.",
        discussion: "Receipts count the recipients' devices that fetched and stored each message (the 50 newest)."
    )

    @Flag(name: .long, help: "Print one JSON array (id, direction, peer, sentAt, read, receipts, …).") var json = false
    @OptionGroup var keyOptions: PrivateKeyOptions

    func run() async throws {
        let context = try DeviceContext(keyOptions: keyOptions)
        _ = try await Inbox.sync(context)
        let outgoing = try StoredMessage.all().filter { !$0.incoming }
        var receipts: [String: MessageStatus] = [:]
        for m in outgoing.suffix(50) {
            receipts[m.id] = try? await context.withSession { try await context.client.messageStatus(id: m.id) }
        }
        if !json, outgoing.isEmpty { print("no messages sent") }
        try Inbox.list(outgoing, json: json, receipts: receipts)
    }
}

/// `countersign read ID`.
struct ReadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Verify a stored message's signature against its sender's keys, decrypt it and print the text.",
        discussion: """
            ID is a message ID from `countersign inbox` or `outbox` (its first few digits will do). The signing \
            key must be one this device pinned for the claimed sender (the first message from someone pins their \
            devices; a rotation their pinned key signed, and a device linked by a vouch from one you pinned, are \
            followed); a key retired before the message was signed is refused; nothing is decrypted unless the \
            signature holds. A message signed by a device the server lists for the sender but you have not pinned \
            is printed on a terminal under a warning line that it is from their new, unverified device; into a pipe \
            or a file it is refused unless --allow-unverified. Works offline with the pinned keys. On a \
            terminal, control characters in the text are shown escaped and a final newline is added when the text \
            has none; into a pipe or a file, the text is written byte for byte, as it was sent.
            """
    )

    @Argument(help: "The message ID.") var id: String
    @Flag(name: .long, help: "Report each step and the signed header on standard error.") var verbose = false
    @Flag(
        name: .long,
        help:
            "Print a message from a sender's device you have not pinned (an unverified device) into a pipe or file too."
    ) var allowUnverified = false
    @OptionGroup var keyOptions: PrivateKeyOptions

    func validate() throws { try StoredMessage.checkPrefix(id) }

    func run() async throws {
        // A revoked device still opens what it kept, offline, with the keys and pins it has.
        let context = try DeviceContext(keyOptions: keyOptions, allowRevoked: true)
        var message = try StoredMessage.find(id)
        guard let bytes = message.envelope?.bytes else {
            throw CLIError.usage(
                "message \(message.id) has not reached this device yet (due \(PrivateFiles.date(message.deliverAt))); run `countersign outbox` later"
            )
        }
        let envelope = try MessageEnvelope(bytes: bytes)
        // The key this device had when the message was sealed: current or rotated away.
        guard let keyPath = DeviceKeys.keyring.keyFilePath(forAnyOf: envelope.recipients) else {
            throw CLIError.usage(
                """
                message \(message.id) is not sealed to any key of this device (it is sealed to \
                \(envelope.recipients.map(\.description).joined(separator: ", ")); this device's key is \
                \(KeyPins.fingerprint(hex: context.device.keyID)))
                """
            )
        }
        let sender = message.from
        let senderKeyID = Hex.encode(envelope.senderKeyID.bytes)
        let signedAt = Date(timeIntervalSince1970: Double(envelope.created) / 1000)
        let me = context.username.lowercased()
        let senderKey: PublicKey
        let signerDevice: String
        let retiredAt: Date?
        var pinsToSave: ContactBook<ConfigDirectory>?
        var unverified: PinnedDevice?
        let ownKeyFiles = context.device.keyFiles
        if sender == me, let ownPath = DeviceKeys.keyring.keyFilePath(for: envelope.senderKeyID),
            ownKeyFiles.contains(where: { PrivateFiles.config.appendingPathComponent($0).path == ownPath })
        {
            // Sent from this device (its current key or one it rotated away, as device.json lists them;
            // not any key file that happens to be in keys/).
            senderKey = try context.identity(at: ownPath).publicKey
            signerDevice = context.device.deviceId
            retiredAt = nil
        } else {
            // Only keys pinned for the sender count (KeyPins.signer): the server's directory is asked to
            // pin a first contact and to follow what pinned keys signed (rotations, links); a key it lists that
            // nothing pinned vouches for is shown only as an unverified device's, never as the sender's.
            var book = try Pins.book()
            var directory: UserDirectory?
            if context.device.revokedAt != nil {
                Terminal.warn("note: this device was revoked; checking against the keys pinned on this device")
            } else {
                do {
                    directory = try await context.withSession { try await context.client.directory(username: sender) }
                } catch let e as ClientError {
                    switch e {
                    case _ where e.isTransient:
                        Terminal.warn(
                            "note: \(Terminal.printable(e.description)); checking against the keys pinned on this device"
                        )
                    case .problem(let p) where p.kind == .notFound:
                        Terminal.warn(
                            "note: the server has no user \(sender) now; checking against the keys pinned on this device"
                        )
                    default: throw e
                    }
                } catch  where context.device.revokedAt != nil {
                    // Renewing the session found the device revoked (and marked it): what is kept still opens.
                    Terminal.warn("note: this device has been revoked; checking against the keys pinned on this device")
                }
            }
            let signer: KeyPins.Signer
            let known = book.contacts[sender] != nil
            do {
                signer = try book.signer(
                    sender: sender,
                    keyID: senderKeyID,
                    signedAt: signedAt,
                    directory: directory,
                    ownUsername: me,
                    ownDeviceID: context.device.deviceId,
                    ownKeyID: context.device.keyID,
                    now: Date()
                )
            } catch PinError.unverifiedDevice(let user, let device) {
                // Signed by a device the server lists for the sender that none of their pinned devices
                // approved: shown, checked under that key, as from their new, unverified device; never into a
                // pipe (a script cannot see the warning) unless asked, never for a contact marked verified.
                if known { try? book.save() }
                if book.contacts[user]?.verifiedAt != nil {
                    throw CLIError.usage(
                        "REFUSED: message \(message.id) is signed by a device of \(user) that you have not verified "
                            + "(\(device.fingerprint)), and you marked \(user) verified; compare `countersign safety-number \(user)`, "
                            + "then `countersign trust \(user)` and `countersign verify \(user)`"
                    )
                }
                if isatty(1) != 1, !allowUnverified {
                    throw CLIError.usage(
                        "REFUSED: message \(message.id) is from \(user)'s new, unverified device (key \(device.fingerprint)); "
                            + "not written into a pipe or file: pass --allow-unverified, or compare `countersign safety-number \(user)` "
                            + "and `countersign trust \(user)` first"
                    )
                }
                guard let spki = device.signingKey, let key = try? PublicKey(spki: spki.bytes) else {
                    throw CLIError.usage(
                        "REFUSED: message \(message.id) was not decrypted: the server lists a key that is not P-256"
                    )
                }
                unverified = device
                let pinnedBefore = book.contacts[user]?.devices.contains { $0.id == device.id } == true
                if isatty(1) == 1 {
                    print(
                        pinnedBefore
                            ? "[UNVERIFIED: signed with a new key of \(user)'s device \"\(Terminal.printable(device.name))\", not one you pinned]"
                            : "[UNVERIFIED: from \(user)'s new device \"\(Terminal.printable(device.name))\", which no device you pinned approved]"
                    )
                }
                Terminal.warn(
                    "warning: this message is from \(user)'s new, unverified device \"\(Terminal.printable(device.name))\" "
                        + "(key \(device.fingerprint)): no device you pinned for \(user) approved it. Compare "
                        + "`countersign safety-number \(user)` with \(user), then `countersign trust \(user)` to verify it"
                )
                signer = KeyPins.Signer(key: key, deviceID: device.id)
            } catch let e as PinError {
                // Rotations followed before the refusal stay followed; a first contact is not pinned by a refusal.
                if known { try? book.save() }
                throw CLIError.usage(
                    "REFUSED: message \(message.id) was not decrypted: \(Terminal.printable(e.description))"
                )
            }
            if unverified == nil { pinsToSave = book }
            Pins.announce(signer.followed, linked: signer.linked, removed: signer.removed, of: sender)
            if let first = signer.firstContact {
                Terminal.warn(
                    "first message from \(sender): pinned \(first.count) device\(first.count == 1 ? "" : "s") (trust on first use): "
                        + first.map(\.label).joined(separator: "; ")
                        + "; compare `countersign safety-number \(sender)` with \(sender) to be sure"
                )
            }
            senderKey = signer.key
            signerDevice = signer.deviceID
            retiredAt = signer.retiredAt
        }
        let identity = try context.identity(at: keyPath)
        let opened = try envelope.open(with: identity, from: senderKey) { if verbose { Terminal.warn($0.rawValue) } }
        // Pinned (a first contact included) only now that the signature held.
        if var pinsToSave { try pinsToSave.save() }
        if verbose {
            let retired = retiredAt.map { ", a key since retired \(PrivateFiles.date($0))" } ?? ""
            Terminal.warn(
                "from: \(sender), device \(signerDevice), key \(opened.sender) (\(unverified == nil ? "pinned" : "NOT pinned: unverified device"))\(retired)"
            )
            Terminal.warn(
                "to: \(message.to.joined(separator: ", ")) (keys \(opened.recipients.map(\.description).joined(separator: ", ")))"
            )
            Terminal.warn("message ID: \(Hex.encode(opened.messageID))")
            Terminal.warn(
                "sent: \(PrivateFiles.date(opened.createdDate)); accepted by the server \(PrivateFiles.date(message.acceptedAt))"
            )
        }
        if signerDevice != message.fromDevice {
            Terminal.warn(
                "warning: the server says device \(Terminal.printable(message.fromDevice)) sent this, but it is signed by \(sender)'s device \(signerDevice)"
            )
        }
        let tty = isatty(1) == 1
        var out = tty ? Array(MessageOpen.terminalSafe(opened.plaintext).utf8) : opened.plaintext
        if tty, out.last != UInt8(ascii: "\n") { out.append(UInt8(ascii: "\n")) }
        FileHandle.standardOutput.write(Data(out))
        if !message.read {
            message.read = true
            message.readAt = Date()
            try message.save()
        }
    }
}
