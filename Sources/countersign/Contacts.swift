import ArgumentParser
import CountersignClient
import CountersignCrypto
import Foundation

extension PinnedDevice {
    var fingerprint: String { KeyPins.fingerprint(hex: signingKeyId) }
    var label: String {
        let encryption =
            encryptionKeyId == signingKeyId ? "" : ", encryption \(KeyPins.fingerprint(hex: encryptionKeyId))"
        return "device \(id) (\"\(Terminal.printable(name))\") key \(fingerprint)\(encryption)"
    }
}

/// The device's pins (`contacts.json`) as the SDK's `ContactBook` keeps them (trust on first use, signed
/// rotations followed, messages verified only under pinned keys), worded for a terminal.
enum Pins {
    /// The config directory's pins; `save()` keeps what this run changed, under the directory's lock.
    static func book() throws -> ContactBook<ConfigDirectory> { try ContactBook(store: PrivateFiles.store) }

    /// The devices of `directory` to pin, as the SDK finds them, with CLI wording for a refusal.
    static func devices(of directory: UserDirectory, me: DeviceFile, myKeyID: String?) throws -> [PinnedDevice] {
        do {
            return try KeyPins.devices(
                of: directory,
                ownUsername: me.username.lowercased(),
                ownDeviceID: me.deviceId,
                ownKeyID: myKeyID
            )
        } catch let e as PinError {
            throw CLIError.usage("\(e); nothing was sent")
        }
    }

    /// Says on standard error which signed rotations, vouched links and removals were followed: each
    /// changed the safety number, calmly.
    static func announce(
        _ followed: [KeyPins.FollowedRotation],
        linked: [KeyPins.FollowedLink] = [],
        removed: [PinnedDevice] = [],
        of user: String
    ) {
        for f in followed {
            Terminal.warn(
                "\(user)'s device \(f.deviceID) rotated its key \(KeyPins.fingerprint(hex: f.from)) -> \(KeyPins.fingerprint(hex: f.to)), "
                    + "signed by the key you pinned: now pinned (safety number changed)"
            )
        }
        for l in linked {
            Terminal.warn(
                "\(user) linked a new device, \"\(Terminal.printable(l.device.name))\" (key \(l.device.fingerprint)), approved by "
                    + "\"\(Terminal.printable(l.byName))\", a device you pinned: now pinned (safety number changed)"
            )
        }
        for d in removed {
            Terminal.warn(
                "\(user) removed the \(d.label): no longer sealed to; what it signed before still verifies (safety number changed)"
            )
        }
    }

    /// What changed, one line each.
    static func lines(_ changes: [DeviceChange]) -> [String] {
        changes.map { change in
            switch change {
            case .added(let d): return "  added    \(d.label)"
            case .removed(let d): return "  removed  \(d.label)"
            case .changed(let before, let d):
                var what =
                    "  changed  device \(d.id) (\"\(Terminal.printable(d.name))\"): key \(before.fingerprint) -> \(d.fingerprint)"
                if before.encryptionKeyId != d.encryptionKeyId,
                    before.encryptionKeyId != before.signingKeyId || d.encryptionKeyId != d.signingKeyId
                {
                    what +=
                        ", encryption \(KeyPins.fingerprint(hex: before.encryptionKeyId)) -> \(KeyPins.fingerprint(hex: d.encryptionKeyId))"
                }
                return what
            }
        }
    }

    /// `send`'s refusal when a pinned user's devices changed.
    static func refusal(_ user: String, own: Bool, pinnedAt: Date, changes: [DeviceChange]) -> ClientError {
        let whose = own ? "your own account \(user)'s other devices" : "\(user)'s devices"
        return ClientError.untrustedDevices(
            username: user,
            detail: """
                REFUSED: \(whose) changed since you pinned them (\(PrivateFiles.date(pinnedAt))); nothing was sent.
                \(lines(changes).joined(separator: "\n"))
                This is expected when \(own ? "you" : user) added, replaced or revoked a device, and is what a server \
                slipping in its own key looks like. \(own ? "If you made these changes" : "Compare `countersign safety-number \(user)` with \(user) in person or over a channel you trust"), \
                then run `countersign trust \(user)` and send again.
                """
        )
    }

    /// `sendMessage`'s check on each directory: follows signed rotations, refuses other changes, and
    /// collects first contacts (pinned by the caller once the message is sent).
    static func checkBeforeSending(
        _ book: inout ContactBook<ConfigDirectory>,
        _ directory: UserDirectory,
        me: DeviceFile,
        myKeyID: String,
        now: Date,
        firstContacts: inout [String: [PinnedDevice]]
    ) throws {
        do {
            switch try book.checkBeforeSending(
                directory,
                ownUsername: me.username.lowercased(),
                ownDeviceID: me.deviceId,
                ownKeyID: myKeyID,
                now: now
            ) {
            case .firstContact(let devices): firstContacts[directory.username] = devices
            case .pinned(let followed, let linked, let removed):
                announce(followed, linked: linked, removed: removed, of: directory.username)
            }
        } catch PinError.changed(let user, let own, let pinnedAt, let changes) {
            throw refusal(user, own: own, pinnedAt: pinnedAt, changes: changes)
        } catch let e as PinError {
            throw CLIError.usage("\(e); nothing was sent")
        }
    }
}

/// `countersign contacts`: the pinned users.
struct ContactsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contacts",
        abstract: "List the people whose devices this device has pinned (trust on first use)."
    )

    func run() throws {
        let book = try Pins.book()
        if book.contacts.isEmpty {
            print("no contacts yet; the first message to someone pins their devices")
            return
        }
        let me = DeviceFile.loadQuietly()?.username.lowercased()
        for c in book.contacts.values.sorted(by: { $0.username < $1.username }) {
            let retired = c.retired?.count ?? 0
            let count = c.devices.count == 1 ? "1 device" : "\(c.devices.count) devices"
            let who = c.username == me ? "\(c.username) (you; your other devices)" : c.username
            print(
                "\(who): \(count), first seen \(PrivateFiles.date(c.firstSeen)), trusted \(PrivateFiles.date(c.trustedAt))"
                    + (retired == 0 ? "" : ", \(retired) earlier key\(retired == 1 ? "" : "s")")
                    + (c.changedAt.map { ", safety number changed \(PrivateFiles.date($0))" } ?? "")
                    + (c.verifiedAt.map { ", verified \(PrivateFiles.date($0))" } ?? "")
            )
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
        var book = try Pins.book()
        let devices = try Pins.devices(of: directory, me: context.device, myKeyID: context.device.keyID)
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
        let changes = Pins.lines(KeyPins.changes(from: old, to: devices))
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
            throw CLIError.usage("there is no user \(user) on \(Terminal.printable(context.device.server))")
        }
    }
}

/// `countersign safety-number USER`.
struct SafetyNumberCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "safety-number",
        abstract:
            "Print the 60-digit number you and USER compare to check the server gave each of you the other's real keys.",
        discussion: """
            Both of you run it; the numbers match exactly when each sees the other's active device keys as they \
            are (docs/SPEC.md §9). Compare in person or over a channel you already trust, then `countersign trust USER`.
            """
    )

    @Argument(help: "The username.") var user: String
    @OptionGroup var keyOptions: PrivateKeyOptions

    func validate() throws { try AccountCommand.validate(username: user.lowercased()) }

    func run() async throws {
        let context = try DeviceContext(keyOptions: keyOptions)
        let me = context.username.lowercased()
        let them = user.lowercased()
        let (digits, theirs) = try await Self.number(context, with: them)
        print(SafetyNumber.display(digits))
        let book = try Pins.book()
        if them != me, let pinned = book.contacts[them] {
            let current = try Pins.devices(of: theirs, me: context.device, myKeyID: nil)
            let changes = Pins.lines(KeyPins.changes(from: pinned.devices, to: current))
            if !changes.isEmpty {
                Terminal.warn(
                    "note: \(them)'s devices differ from the ones you pinned:\n\(changes.joined(separator: "\n"))\nif the numbers match, run `countersign trust \(them)`"
                )
            }
        }
    }

    /// The safety number with `them` from both accounts' directories as they are now (a directory with a key
    /// its device never proved is refused), and their directory.
    static func number(_ context: DeviceContext, with them: String) async throws -> (String, UserDirectory) {
        let mine = try await Directory.fetch(context, context.username.lowercased())
        let theirs = try await Directory.fetch(context, them)
        func keys(_ d: UserDirectory) throws -> [PublicKey] {
            // A number over a device whose encryption key its signing key never chose would match and still
            // hide the swap (docs/PROTOCOL.md §1.3): refused.
            do { try KeyPins.requireKeysProven(d) } catch let e as PinError {
                throw CLIError.usage("no safety number: \(e)")
            }
            return try d.devices.map { device in
                do { return try PublicKey(spki: device.signingKey.bytes) } catch {
                    throw CLIError.usage(
                        "the server lists a device \(device.id) of \(d.username) whose key is not a P-256 public key"
                    )
                }
            }
        }
        do {
            let digits = try SafetyNumber.compute(
                localUsername: mine.username,
                localSigningKeys: try keys(mine),
                remoteUsername: theirs.username,
                remoteSigningKeys: try keys(theirs)
            )
            return (digits, theirs)
        } catch let e as CLIError {
            throw e
        } catch {
            throw CLIError.usage("no safety number: \(error)")
        }
    }
}
