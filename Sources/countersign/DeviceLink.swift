import ArgumentParser
import CountersignAPI
import CountersignClient
import CountersignCrypto
import Foundation

/// Linking (docs/PROTOCOL.md §1): a new device shows its link code; another device of the account that a
/// person holds compares it and vouches for the new device's keys, so that contacts follow it calmly.
extension DeviceCommand {
    /// This device as its own account's directory lists it, checked against the key it holds.
    static func ownListing(_ context: DeviceContext) async throws -> (UserDirectory, DirectoryDevice) {
        let directory = try await Directory.fetch(context, context.username.lowercased())
        guard let me = directory.devices.first(where: { $0.id == context.device.deviceId }) else {
            throw CLIError.usage(
                "the server does not list this device (\(context.device.deviceId)) as active; run `countersign device list`"
            )
        }
        // Both keys: the link code is computed from the listing, and a CLI device's one key signs and opens.
        let listed = [me.signingKey, me.encryptionKey].map { KeyPins.keyID(spki: $0.bytes) ?? "?" }
        guard listed.allSatisfy({ $0 == context.device.keyID }) else {
            throw CLIError.usage(
                "REFUSED: the server lists this device with keys \(listed.map(KeyPins.fingerprint(hex:)).joined(separator: " and ")), "
                    + "but its key is \(KeyPins.fingerprint(hex: context.device.keyID)); someone may have replaced this device's key on the server"
            )
        }
        return (directory, me)
    }

    static func voucher(of device: String, in directory: UserDirectory) -> DeviceVouch? {
        directory.history.first { $0.deviceId == device && $0.vouch != nil }?.vouch
    }

    /// The name of the device or approver `id` of `directory`, else its ID.
    static func name(of id: String, in directory: UserDirectory) -> String {
        directory.devices.first { $0.id == id }?.name ?? directory.approvers?.first { $0.id == id }?.name ?? id
    }

    /// The one device waiting to be linked by `me` (`CountersignClient.devicesAwaitingLink`) that `deviceID`
    /// and `code` name; nil when there is nothing to do (said: none waiting, or the coded one linked already).
    /// Refused when `deviceID` names none waiting, when no waiting device has `code`, or when several wait and
    /// none is named (they are listed, with `nameOne` to run).
    static func chooseWaiting(
        in directory: UserDirectory,
        seenBy me: String,
        deviceID: String?,
        code: String?,
        nothing: String,
        nameOne: String
    ) throws -> DirectoryDevice? {
        var waiting = CountersignClient.devicesAwaitingLink(directory, seenBy: me)
        if let deviceID {
            waiting = waiting.filter { $0.id == deviceID }
            guard !waiting.isEmpty else {
                throw CLIError.usage(
                    "device \(Terminal.printable(deviceID)) is not waiting to be linked by this device "
                        + "(it is not active, was approved already, or is older than this device); see `countersign device list`"
                )
            }
        }
        if let code {
            let digits = code.filter(\.isNumber)
            waiting = waiting.filter { CountersignClient.linkCode(of: $0)?.filter(\.isNumber) == digits }
            if waiting.isEmpty, let linked = alreadyLinked(digits, in: directory) {
                print(linked)
                return nil
            }
            guard !waiting.isEmpty else {
                throw CLIError.usage(
                    "REFUSED: no device waiting to be linked has the code \(code); nothing was approved. Check the code "
                        + "the new device shows; a different code means the server lists other keys than that device holds"
                )
            }
        }
        guard !waiting.isEmpty else {
            print(nothing)
            return nil
        }
        guard waiting.count == 1, let target = waiting.first else {
            print("devices waiting to be linked:")
            for d in waiting {
                print("  \(d.id)  \"\(Terminal.printable(d.name))\"  code \(CountersignClient.linkCode(of: d) ?? "?")")
            }
            throw CLIError.usage("name one: `\(nameOne)`")
        }
        return target
    }

    /// A device of `directory` with the link code `digits` that was linked already: said instead of a refusal
    /// (approving it again changes nothing), with who approved it.
    static func alreadyLinked(_ digits: String, in directory: UserDirectory) -> String? {
        for d in directory.devices where CountersignClient.linkCode(of: d)?.filter(\.isNumber) == digits {
            guard let v = voucher(of: d.id, in: directory) else { continue }
            return
                "\"\(Terminal.printable(d.name))\" is linked already (approved by \"\(Terminal.printable(name(of: v.deviceId, in: directory)))\"): nothing to do"
        }
        return nil
    }

    struct Link: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show this device's link code and wait until another device of your account approves it.",
            discussion: """
                Run it on the new device after `countersign device init`. On a device of the account you already \
                use, run `countersign device approve` (or open Settings, Devices in the web client), check that it \
                shows the same code, and approve: it signs a vouch for this device's keys, and the people who \
                pinned that device then follow this one without being asked to compare safety numbers again.
                """
        )
        @Option(name: .long, help: "Seconds to wait for the approval; 0 shows the code and returns.") var wait = 300
        @OptionGroup var keyOptions: PrivateKeyOptions

        func validate() throws {
            guard (0...3600).contains(wait) else { throw ValidationError("--wait takes 0 to 3600 seconds") }
        }

        func run() async throws {
            let context = try DeviceContext(keyOptions: keyOptions)
            var (directory, me) = try await DeviceCommand.ownListing(context)
            if let v = DeviceCommand.voucher(of: me.id, in: directory) {
                print(
                    "this device is linked already (approved by \"\(Terminal.printable(DeviceCommand.name(of: v.deviceId, in: directory)))\")"
                )
                return
            }
            guard let code = CountersignClient.linkCode(of: me) else {
                throw CLIError.usage("the server lists this device with a key that is not P-256")
            }
            if !directory.devices.contains(where: { $0.id != me.id && $0.createdAt < me.createdAt }) {
                print(
                    "this is the oldest active device of \(context.username): no other device can approve it, and none needs to"
                )
                return
            }
            print("Link code: \(code)")
            print(
                "On another device of \(context.username), run `countersign device approve` or open Settings, Devices in the web client "
                    + "(or on your paired authenticator, `countersign authenticator approve-device`), "
                    + "and approve this device only if it shows this code."
            )
            QRText.show("countersign://link?device=\(me.id)&code=\(code.filter(\.isNumber))")
            guard wait > 0 else { return }
            let deadline = Date().addingTimeInterval(TimeInterval(wait))
            while Date() < deadline {
                try await Task.sleep(for: .seconds(2))
                (directory, me) = try await DeviceCommand.ownListing(context)
                if let v = DeviceCommand.voucher(of: me.id, in: directory) {
                    print(
                        "linked: approved by \"\(Terminal.printable(DeviceCommand.name(of: v.deviceId, in: directory)))\""
                    )
                    return
                }
            }
            throw CLIError.usage(
                "not approved within \(wait) s; run `countersign device link` again when the other device is at hand"
            )
        }
    }

    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Approve a new device of your account after comparing its link code.",
            discussion: """
                Lists the devices of your account added after this one that no device approved yet, shows each \
                one's name, fingerprint and link code, and asks "Is this your new device?". Approving signs a vouch \
                (docs/PROTOCOL.md §1) with this device's key: people who pinned this device then follow the new one. \
                Never approve a device whose code differs from the one the new device shows. Not at a terminal, \
                pass --code with the code the new device shows, and --yes.
                """
        )
        @Argument(help: "The new device's ID (see `countersign device list`); default: the one waiting.") var deviceID:
            String?
        @Option(name: .long, help: "The link code the new device shows; only a device with this code is approved.")
        var code: String?
        @Flag(name: .long, help: "Approve without asking (requires --code).") var yes = false
        @OptionGroup var keyOptions: PrivateKeyOptions

        func validate() throws { try DeviceCommand.validate(code: code, yes: yes, what: "the new device") }

        func run() async throws {
            let context = try DeviceContext(keyOptions: keyOptions)
            let (directory, me) = try await DeviceCommand.ownListing(context)
            guard
                let target = try DeviceCommand.chooseWaiting(
                    in: directory,
                    seenBy: me.id,
                    deviceID: deviceID,
                    code: code,
                    nothing: "no device of \(context.username) is waiting to be linked",
                    nameOne: "countersign device approve DEVICE-ID"
                )
            else { return }
            let linkCode = CountersignClient.linkCode(of: target) ?? "?"
            print("Is this your new device?")
            print(
                "  name:        \"\(Terminal.printable(target.name))\" (\(target.id)), added \(PrivateFiles.date(target.createdAt))"
            )
            print("  fingerprint: \(KeyPins.fingerprint(hex: KeyPins.keyID(spki: target.signingKey.bytes) ?? ""))")
            print("  link code:   \(linkCode)")
            guard
                try DeviceCommand.confirm(
                    yes: yes && code != nil,
                    "Approve it only if the new device shows this code.",
                    what: "the new device"
                )
            else {
                print("not approved")
                return
            }
            let identity = try context.currentIdentity()
            _ = try await context.withSession {
                try await context.client.vouchDevice(
                    target,
                    username: context.username,
                    voucherDeviceID: me.id,
                    voucher: identity,
                    now: Date()
                )
            }
            // Approved here after the code was compared: this device's own pins take it at once.
            if let signing = KeyPins.keyID(spki: target.signingKey.bytes),
                let encryption = KeyPins.keyID(spki: target.encryptionKey.bytes)
            {
                var book = try Pins.book()
                let device = PinnedDevice(
                    id: target.id,
                    name: target.name,
                    signingKeyId: signing,
                    encryptionKeyId: encryption,
                    signingKey: target.signingKey
                )
                if book.pinApproved(context.username.lowercased(), device, now: Date()) { try book.save() }
            }
            print(
                "approved \"\(Terminal.printable(target.name))\": people who pinned this device now follow it without a warning"
            )
        }
    }
}

/// `countersign verify USER --number DIGITS`: Signal's "Mark as verified", for the devices whose safety number
/// was compared.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            "Mark a contact verified after comparing the safety number; any change of their devices then waits for you.",
        discussion: """
            Compare `countersign safety-number USER` with them first, then give the number you compared (`--number`, \
            spaces allowed; on a terminal you are asked to confirm the number instead). The mark covers exactly \
            the devices that number is over: it is refused if the server's list of their devices differs from the \
            ones you pinned (`countersign trust USER` first) or from the number given. A verified contact's \
            devices are never followed on your behalf: a rotation, a linked device or a removed one blocks sending \
            until you compare again, `countersign trust USER` and `countersign verify USER` again. --undo takes the \
            mark away.
            """
    )
    @Argument(help: "The username.") var user: String
    @Option(name: .long, help: "The 60-digit safety number you compared with them.") var number: String?
    @Flag(name: .long, help: "Remove the mark.") var undo = false
    @OptionGroup var keyOptions: PrivateKeyOptions

    func validate() throws {
        try AccountCommand.validate(username: user.lowercased())
        if undo, number != nil { throw ValidationError("--undo takes no --number") }
    }

    func run() async throws {
        let name = user.lowercased()
        let missing = CLIError.usage(
            "nothing is pinned for \(name) yet: send them a message or `countersign trust \(name)` first"
        )
        if undo {
            var book = try Pins.book()
            guard book.setVerified(name, false, now: Date()) else { throw missing }
            try book.save()
            print("\(name) is no longer marked verified")
            return
        }
        let context = try DeviceContext(keyOptions: keyOptions)
        guard let pinned = try Pins.book().contacts[name] else { throw missing }
        let (digits, theirs) = try await SafetyNumberCommand.number(context, with: name)
        let current = try Pins.devices(of: theirs, me: context.device, myKeyID: nil)
        let changes = Pins.lines(KeyPins.changes(from: pinned.devices, to: current))
        guard changes.isEmpty else {
            throw CLIError.usage(
                "\(name)'s devices differ from the ones you pinned:\n\(changes.joined(separator: "\n"))\ncompare "
                    + "`countersign safety-number \(name)` with them, run `countersign trust \(name)`, then verify"
            )
        }
        if let number {
            guard number.filter({ !$0.isWhitespace }) == digits else {
                throw CLIError.usage(
                    "that is not the safety number with \(name) now (\(SafetyNumber.display(digits))): nothing was "
                        + "marked. If theirs is the one you gave, your devices or theirs changed: compare again"
                )
            }
        } else {
            guard Terminal.stdinIsTTY else {
                throw CLIError.usage("give the number you compared: `countersign verify \(name) --number DIGITS`")
            }
            print("Safety number with \(name):\n\(SafetyNumber.display(digits))")
            print("Is this the number \(name) sees? Type yes to mark them verified: ", terminator: "")
            guard readLine()?.trimmingCharacters(in: .whitespaces).lowercased() == "yes" else {
                throw CLIError.usage("not marked: \(name) is as before")
            }
        }
        // Marked in the book as saved now, over the devices just compared (the pins of another run may have
        // moved on meanwhile: then nothing is marked).
        var book = try Pins.book()
        guard let again = book.contacts[name], again.devices == pinned.devices else {
            throw CLIError.usage("\(name)'s pins changed while this ran: nothing was marked; verify again")
        }
        book.setVerified(name, true, now: Date())
        try book.save()
        print("\(name) is marked verified: any change of their devices now waits for you")
    }
}
