import ArgumentParser
import CountersignClient
import CountersignCrypto
import Foundation

/// A device as pinned: its ID and the key IDs computed here from the keys the directory gave (never the
/// server's own key ID fields, which it could set apart from the keys).
struct PinnedDevice: Codable, Equatable {
    var id: String
    var name: String
    var signingKeyId: String
    var encryptionKeyId: String

    var identity: String { "\(id) \(signingKeyId) \(encryptionKeyId)" }
    var fingerprint: String { KeyIDs.fingerprint(hex: signingKeyId) }
    var label: String {
        let encryption = encryptionKeyId == signingKeyId ? "" : ", encryption \(KeyIDs.fingerprint(hex: encryptionKeyId))"
        return "device \(id) (\"\(Terminal.printable(name))\") key \(fingerprint)\(encryption)"
    }
}

/// Trust on first use: the device sets of the people this device has written to (`contacts.json`), and of
/// its own account's other devices, each as first seen or last confirmed with `countersign trust`.
struct ContactBook: Codable {
    struct Contact: Codable {
        var username: String
        var firstSeen: Date
        var trustedAt: Date
        var devices: [PinnedDevice]
    }

    var contacts: [String: Contact] = [:]

    static func load() throws -> ContactBook { try PrivateFiles.readJSON(ContactBook.self, at: PrivateFiles.contactsURL) ?? ContactBook() }
    func save() throws { try PrivateFiles.writeJSON(self, to: PrivateFiles.contactsURL) }

    /// The devices of `directory` to pin: every active one, but this device itself for its own account
    /// (its key is the one in the keyring). Throws when a key is not P-256 or the server lists this
    /// device with a key it does not hold.
    static func devices(of directory: UserDirectory, me: DeviceFile, myKeyID: String?) throws -> [PinnedDevice] {
        let user = directory.username.lowercased()
        var out: [PinnedDevice] = []
        for d in directory.devices {
            guard let signing = KeyIDs.hex(spki: d.signingKey.bytes), let encryption = KeyIDs.hex(spki: d.encryptionKey.bytes) else {
                throw CLIError.usage("the server lists a device \(d.id) of \(user) whose key is not a P-256 public key; nothing was sent")
            }
            if user == me.username.lowercased(), d.id == me.deviceId {
                if let myKeyID, signing != myKeyID || encryption != myKeyID {
                    throw CLIError.usage("""
                        REFUSED: the server lists this device (\(d.id)) with key \(KeyIDs.fingerprint(hex: signing)), \
                        but its key is \(KeyIDs.fingerprint(hex: myKeyID)); someone may have replaced this device's key on the server
                        """)
                }
                continue
            }
            out.append(PinnedDevice(id: d.id, name: d.name, signingKeyId: signing, encryptionKeyId: encryption))
        }
        return out.sorted { $0.id < $1.id }
    }

    /// What changed from `old` to `new`, one line each.
    static func changes(from old: [PinnedDevice], to new: [PinnedDevice]) -> [String] {
        var lines: [String] = []
        let oldByID = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let newByID = Dictionary(new.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        for d in new where oldByID[d.id] == nil { lines.append("  added    \(d.label)") }
        for d in old where newByID[d.id] == nil { lines.append("  removed  \(d.label)") }
        for d in new {
            guard let before = oldByID[d.id], before.identity != d.identity else { continue }
            var what = "  changed  device \(d.id) (\"\(Terminal.printable(d.name))\"): key \(before.fingerprint) -> \(d.fingerprint)"
            if before.encryptionKeyId != d.encryptionKeyId, before.encryptionKeyId != before.signingKeyId || d.encryptionKeyId != d.signingKeyId {
                what += ", encryption \(KeyIDs.fingerprint(hex: before.encryptionKeyId)) -> \(KeyIDs.fingerprint(hex: d.encryptionKeyId))"
            }
            lines.append(what)
        }
        return lines
    }

    /// `sendMessage`'s check: a pinned user whose devices changed is refused; an unknown one is pinned
    /// in `firstContacts` (saved by the caller once the message is sent).
    func check(_ directory: UserDirectory, me: DeviceFile, myKeyID: String, firstContacts: inout [String: [PinnedDevice]]) throws {
        let user = directory.username.lowercased()
        let current = try Self.devices(of: directory, me: me, myKeyID: myKeyID)
        guard let pinned = contacts[user] else {
            firstContacts[user] = current
            return
        }
        let changes = Self.changes(from: pinned.devices, to: current)
        guard !changes.isEmpty else { return }
        let own = user == me.username.lowercased()
        let whose = own ? "your own account \(user)'s other devices" : "\(user)'s devices"
        throw ClientError.untrustedDevices(username: user, detail: """
            REFUSED: \(whose) changed since you pinned them (\(PrivateFiles.date(pinned.trustedAt))); nothing was sent.
            \(changes.joined(separator: "\n"))
            This is expected when \(own ? "you" : user) added, replaced or revoked a device, and is what a server \
            slipping in its own key looks like. \(own ? "If you made these changes" : "Compare `countersign safety-number \(user)` with \(user) in person or over a channel you trust"), \
            then run `countersign trust \(user)` and send again.
            """)
    }

    mutating func pin(_ user: String, _ devices: [PinnedDevice], now: Date) {
        let first = contacts[user]?.firstSeen ?? now
        contacts[user] = Contact(username: user, firstSeen: first, trustedAt: now, devices: devices)
    }
}

/// `countersign contacts`: the pinned users.
struct ContactsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contacts",
        abstract: "List the people whose devices this device has pinned (trust on first use)."
    )

    func run() throws {
        let book = try ContactBook.load()
        if book.contacts.isEmpty {
            print("no contacts yet; the first message to someone pins their devices")
            return
        }
        let me = DeviceFile.loadQuietly()?.username.lowercased()
        for c in book.contacts.values.sorted(by: { $0.username < $1.username }) {
            let count = c.devices.count == 1 ? "1 device" : "\(c.devices.count) devices"
            let who = c.username == me ? "\(c.username) (you; your other devices)" : c.username
            print("\(who): \(count), first seen \(PrivateFiles.date(c.firstSeen)), trusted \(PrivateFiles.date(c.trustedAt))")
            for d in c.devices { print("  \(d.fingerprint)  \(d.id)  \(Terminal.printable(d.name))") }
        }
    }
}

/// `countersign trust USER`: pin USER's current devices.
struct TrustCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Pin a user's current devices as the server lists them, showing what changed.",
        discussion: "Check first: compare `countersign safety-number USER` with them over a channel you trust."
    )

    @Argument(help: "The username.") var user: String
    @OptionGroup var keyOptions: PrivateKeyOptions

    func validate() throws { try AccountCommand.validate(username: user.lowercased()) }

    func run() async throws {
        let context = try DeviceContext(keyOptions: keyOptions)
        let name = user.lowercased()
        let directory = try await Directory.fetch(context, name)
        var book = try ContactBook.load()
        let devices = try ContactBook.devices(of: directory, me: context.device, myKeyID: context.device.keyID)
        let old = book.contacts[name]?.devices
        book.pin(name, devices, now: Date())
        try book.save()
        let count = devices.count == 1 ? "1 device" : "\(devices.count) devices"
        let whose = name == context.username.lowercased() ? "\(name) (your other devices)" : name
        guard let old else {
            print("pinned \(whose): \(count)")
            for d in devices { print("  \(d.label)") }
            return
        }
        let changes = ContactBook.changes(from: old, to: devices)
        print(changes.isEmpty ? "\(whose): \(count), unchanged" : "pinned \(whose): \(count)")
        for line in changes { print(line) }
    }
}

/// Directory lookups with messages a person can act on.
enum Directory {
    static func fetch(_ context: DeviceContext, _ user: String) async throws -> UserDirectory {
        do {
            return try await context.withSession { try await context.client.directory(username: user) }
        } catch let e as ClientError where e.code == .notFound {
            throw CLIError.usage("there is no user \(user) on \(context.device.server)")
        }
    }
}

/// `countersign safety-number USER`.
struct SafetyNumberCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "safety-number",
        abstract: "Print the 60-digit number you and USER compare to check the server gave each of you the other's real keys.",
        discussion: """
        Both of you run it; the numbers match exactly when each sees the other's active device keys as they \
        are (docs/SPEC.md §4f). Compare in person or over a channel you already trust, then `countersign trust USER`.
        """
    )

    @Argument(help: "The username.") var user: String
    @OptionGroup var keyOptions: PrivateKeyOptions

    func validate() throws { try AccountCommand.validate(username: user.lowercased()) }

    func run() async throws {
        let context = try DeviceContext(keyOptions: keyOptions)
        let me = context.username.lowercased()
        let them = user.lowercased()
        let mine = try await Directory.fetch(context, me)
        let theirs = try await Directory.fetch(context, them)
        func keys(_ d: UserDirectory) throws -> [PublicKey] {
            try d.devices.map { device in
                do { return try PublicKey(spki: device.signingKey.bytes) } catch {
                    throw CLIError.usage("the server lists a device \(device.id) of \(d.username) whose key is not a P-256 public key")
                }
            }
        }
        let digits: String
        do {
            digits = try SafetyNumber.compute(localUsername: mine.username, localSigningKeys: try keys(mine),
                                              remoteUsername: theirs.username, remoteSigningKeys: try keys(theirs))
        } catch let e as CLIError {
            throw e
        } catch {
            throw CLIError.usage("no safety number: \(error)")
        }
        print(SafetyNumber.display(digits))
        let book = try ContactBook.load()
        if them != me, let pinned = book.contacts[them] {
            let current = try ContactBook.devices(of: theirs, me: context.device, myKeyID: nil)
            let changes = ContactBook.changes(from: pinned.devices, to: current)
            if !changes.isEmpty {
                Terminal.warn("note: \(them)'s devices differ from the ones you pinned:\n\(changes.joined(separator: "\n"))\nif the numbers match, run `countersign trust \(them)`")
            }
        }
    }
}
