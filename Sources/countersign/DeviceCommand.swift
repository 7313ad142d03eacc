import ArgumentParser
import CountersignClient
import CountersignCrypto
import Foundation

/// `countersign device …`: this config directory as a device of the signed-in account.
struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "Make this config directory a device of your account, list, revoke and rotate devices.",
        discussion: """
            A device is one config directory ($COUNTERSIGN_CONFIG_DIR, else ~/.config/countersign) with its own \
            P-256 key in keys/ (encrypted PKCS#8, mode 0600), used both to sign what it sends and to open what \
            it receives. Several users share a machine by using one config directory each.
            """,
        subcommands: [
            Init.self, List.self, Rename.self, Revoke.self, Rotate.self, Link.self, Approve.self, Endorse.self,
        ]
    )

    /// The signed-in account session, or an error naming `account login`.
    static func accountClient() throws -> (CountersignClient, SessionFile) {
        guard let session = try SessionFile.load() else { throw ClientError.notSignedIn }
        guard let url = URL(string: session.server) else {
            throw CLIError.io("\(SessionFile.url.path) names no valid server")
        }
        return (CountersignClient(server: url, token: session.token), session)
    }

    /// Runs an account call that may need a recent password check: when the server asks for one, the
    /// password is read (--password-file or the terminal) and, on an account with a second factor, that
    /// factor given too (--otp, --recovery-code, or a push approval it waits for); then the call is made
    /// once more.
    static func withReauthentication<T>(
        _ client: CountersignClient,
        _ session: SessionFile,
        _ options: ReauthOptions,
        what: String,
        _ call: () async throws -> T
    ) async throws -> T {
        do {
            return try await accountCall(call)
        } catch let e as ClientError where e.code == .reauthenticationRequired {
            let password: String
            do {
                password = try AccountCommand.password(
                    file: options.passwordFile,
                    prompt:
                        "The server asks for your password again before \(what).\nPassword for \(session.username): "
                )
            } catch let e as CLIError {
                throw CLIError.usage(
                    """
                    the server asks for your password again before \(what) (re-authentication): pass --password-file FILE, \
                    or sign in again with `countersign account login \(session.username)` and retry (\(e))
                    """
                )
            }
            try await reauthenticate(client, password: password, otp: options.otp, recoveryCode: options.recoveryCode)
            return try await accountCall(call)
        }
    }

    /// Password, then the second factor when the account has one.
    static func reauthenticate(
        _ client: CountersignClient,
        password: String,
        otp: String?,
        recoveryCode: String?
    ) async throws {
        do {
            try await accountCall {
                try await client.reauthenticate(password: password, offerPush: otp == nil && recoveryCode == nil)
            }
        } catch ClientError.secondFactorRequired(let pending) {
            try await accountCall {
                try await MFALogin.reauthenticate(client, pending, otp: otp, recoveryCode: recoveryCode)
            }
        }
    }

    /// An account call whose expired session is named as such.
    static func accountCall<T>(_ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch let e as ClientError where e.code == .unauthenticated {
            throw CLIError.usage("your account session has ended (\(e)); run `countersign account login` again")
        }
    }

    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a key for this device, register it with the signed-in account and open a device session.",
            discussion:
                "Run `countersign account login` first. The key goes to keys/<key ID>.key in the config directory."
        )

        @Option(
            help: ArgumentHelp("The device's name, 1 to 64 characters (default: the host name).", valueName: "name")
        )
        var name: String?

        @Option(
            name: .long,
            help: ArgumentHelp("Read the new key's passphrase from the first line of this file.", valueName: "file")
        )
        var passphraseFile: String?

        @Flag(name: .long, help: "Store the device key unencrypted.")
        var noPassphrase = false

        @OptionGroup var reauth: ReauthOptions

        func validate() throws {
            if noPassphrase, passphraseFile != nil {
                throw ValidationError("--no-passphrase and --passphrase-file exclude each other")
            }
            if let name, !(1...64).contains(name.trimmingCharacters(in: .whitespaces).unicodeScalars.count) {
                throw ValidationError("--name takes 1 to 64 characters")
            }
        }

        func run() async throws {
            try AuthenticatorFile.refuseDevice()
            let (client, session) = try DeviceCommand.accountClient()
            if let existing = try DeviceFile.load() {
                guard existing.username == session.username else {
                    throw CLIError.usage(
                        """
                        \(PrivateFiles.config.path) holds \(existing.username)'s device, but you are signed in as \(session.username); \
                        give each user a config directory of their own (COUNTERSIGN_CONFIG_DIR=DIR)
                        """
                    )
                }
                let listed =
                    existing.revokedAt != nil ? [] : try await DeviceCommand.accountCall { try await client.devices() }
                if let still = listed.first(where: { $0.id == existing.deviceId }), still.revokedAt == nil {
                    throw CLIError.usage(
                        """
                        this config directory already is device \(existing.deviceId) ("\(Terminal.printable(existing.name))") of \(existing.username); \
                        to replace it, run `countersign device revoke \(existing.deviceId)` first
                        """
                    )
                }
                // Revoked elsewhere: what is left here is stale (its keys stay in the keyring).
                DeviceFile.remove()
                Terminal.warn("note: this directory's device \(existing.deviceId) has been revoked; making a new one")
            }
            let deviceName = (name ?? DeviceContext.hostName()).trimmingCharacters(in: .whitespaces)
            let passphrase = try DeviceKeys.newPassphrase(file: passphraseFile, none: noPassphrase)
            let identity = Identity.generate()
            let keyFile = try DeviceKeys.keyring.store(identity, passphrase: passphrase)
            let device: Device
            do {
                device = try await DeviceCommand.withReauthentication(client, session, reauth, what: "adding a device")
                {
                    try await client.registerDevice(
                        name: deviceName,
                        signing: identity,
                        encryptionKey: identity.publicKey
                    )
                }
            } catch {
                PrivateFiles.remove(PrivateFiles.config.appendingPathComponent(keyFile))
                throw error
            }
            let state = DeviceFile(
                server: session.server,
                username: session.username,
                deviceId: device.id,
                name: device.name,
                keyFile: keyFile,
                oldKeyFiles: [],
                pendingKeyFile: nil,
                createdAt: device.createdAt
            )
            try state.save()
            print("registered device \(device.id) (\"\(Terminal.printable(device.name))\") for \(session.username)")
            print(
                "key \(PrivateFiles.config.appendingPathComponent(keyFile).path), fingerprint \(identity.publicKey.fingerprint)"
            )
            do {
                let opened = try await client.openDeviceSession(deviceID: device.id, signing: identity)
                try DeviceSessionFile(deviceId: device.id, token: opened.token, expiresAt: opened.expiresAt).save()
            } catch {
                Terminal.warn("warning: no device session yet (\(error)); the next message command opens one")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "List your account's devices (messaging devices and authenticators), revoked ones included; * marks this one."
        )
        @Flag(
            name: .long,
            help:
                "Print one JSON array (id, name, kind, fingerprint, createdAt, lastSeenAt, revokedAt, thisDevice, approvedBy, endorsedBy)."
        ) var json = false

        func run() async throws {
            let (client, session) = try DeviceCommand.accountClient()
            let mine = DeviceFile.loadQuietly().flatMap {
                $0.server == session.server && $0.username == session.username ? $0 : nil
            }
            let devices = try await DeviceCommand.accountCall { try await client.devices() }
            if json {
                let rows: [[String: Any]] = devices.sorted(by: { $0.createdAt < $1.createdAt }).map { d in
                    [
                        "id": d.id, "name": d.name, "kind": d.kind.rawValue,
                        "fingerprint": KeyPins.fingerprint(hex: d.signingKeyId),
                        "createdAt": PrivateFiles.date(d.createdAt),
                        "lastSeenAt": d.lastSeenAt.map(PrivateFiles.date) ?? NSNull(),
                        "revokedAt": d.revokedAt.map(PrivateFiles.date) ?? NSNull(),
                        "thisDevice": d.id == mine?.deviceId,
                        "approvedBy": d.vouch?.deviceId ?? NSNull(),
                        "endorsedBy": d.endorsement?.deviceId ?? NSNull(),
                    ]
                }
                try Terminal.printJSON(rows)
                return
            }
            if devices.isEmpty {
                print("no devices; run `countersign device init` to make this one")
                return
            }
            print(
                [
                    "  " + "ID".padding(toLength: 36, withPad: " ", startingAt: 0),
                    "NAME".padding(toLength: 20, withPad: " ", startingAt: 0),
                    "KIND".padding(toLength: 13, withPad: " ", startingAt: 0),
                    "FINGERPRINT".padding(toLength: 35, withPad: " ", startingAt: 0),
                    "CREATED".padding(toLength: 20, withPad: " ", startingAt: 0),
                    "LAST SEEN".padding(toLength: 20, withPad: " ", startingAt: 0), "REVOKED",
                ].joined(separator: "  ")
            )
            for d in devices.sorted(by: { $0.createdAt < $1.createdAt }) {
                let this = d.id == mine?.deviceId
                let name = Terminal.printable(d.name)
                let columns = [
                    (this ? "* " : "  ") + d.id.padding(toLength: max(36, d.id.count), withPad: " ", startingAt: 0),
                    name.count > 20
                        ? String(name.prefix(19)) + "…" : name.padding(toLength: 20, withPad: " ", startingAt: 0),
                    d.kind.rawValue.padding(toLength: 13, withPad: " ", startingAt: 0),
                    KeyPins.fingerprint(hex: d.signingKeyId).padding(toLength: 35, withPad: " ", startingAt: 0),
                    PrivateFiles.date(d.createdAt),
                    (d.lastSeenAt.map(PrivateFiles.date) ?? "never").padding(toLength: 20, withPad: " ", startingAt: 0),
                    d.revokedAt.map(PrivateFiles.date) ?? "-",
                ]
                let approvedBy = d.vouch.map { v in
                    "  (approved by \(Terminal.printable(devices.first { $0.id == v.deviceId }?.name ?? v.deviceId)))"
                }
                let endorsedBy = d.endorsement.map { e in
                    "  (approves new devices; allowed by \(Terminal.printable(devices.first { $0.id == e.deviceId }?.name ?? e.deviceId)))"
                }
                print(
                    columns.joined(separator: "  ") + (this ? "  (this device)" : "") + (approvedBy ?? "")
                        + (endorsedBy ?? "")
                )
            }
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rename a device of your account (this one or another; see `countersign device list`).",
            discussion: """
                The name is what your account's devices and the people who message you see: 1 to 64 characters, \
                none of them invisible or direction-changing, and no word mixing look-alike alphabets.
                """
        )

        @Argument(help: "The device ID (see `countersign device list`).") var id: String
        @Argument(help: "The new name.") var name: String

        func run() async throws {
            let (client, session) = try DeviceCommand.accountClient()
            let devices = try await DeviceCommand.accountCall { try await client.devices() }
            guard let old = devices.first(where: { $0.id == id }) else {
                throw CLIError.usage(
                    "\(session.username) has no device \(Terminal.printable(id)); `countersign device list` shows their IDs"
                )
            }
            let renamed = try await DeviceCommand.accountCall { try await client.renameDevice(id: id, to: name) }
            // This directory's own record keeps the name it shows.
            if var mine = DeviceFile.loadQuietly(), mine.deviceId == id, mine.server == session.server {
                mine.name = renamed.name
                try mine.save()
            }
            print(
                "renamed device \(id): \"\(Terminal.printable(old.name))\" -> \"\(Terminal.printable(renamed.name))\""
            )
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a device of your account: its sessions end and it receives nothing more.",
            discussion: """
                Revoking this device also marks it revoked here (device.json): nothing but `read` runs with it, and its keys and \
                stored messages stay. A device of another account kept in this directory is never touched.
                """
        )

        @Argument(help: "The device ID (see `countersign device list`).") var id: String

        @OptionGroup var reauth: ReauthOptions

        func run() async throws {
            let (client, session) = try DeviceCommand.accountClient()
            // "This device" is decided here, by device ID, account and server, never by the server's answer
            // alone: a directory holding another account's device keeps it, whatever the server says.
            let local = DeviceFile.loadQuietly()
            let mine = local.flatMap {
                $0.deviceId == id && $0.server == session.server && $0.username == session.username ? $0 : nil
            }
            func markThisDevice(_ device: DeviceFile) {
                device.markRevoked()
                print(
                    "that was this device: it is marked revoked here (its keys and stored messages stay; `countersign read ID` opens them); "
                        + "`countersign device init` makes a new one"
                )
            }
            do {
                try await DeviceCommand.withReauthentication(client, session, reauth, what: "revoking a device") {
                    try await client.revokeDevice(id: id)
                }
            } catch let e as ClientError
                where e.code == .notFound || (e.code == nil && "\(e)".contains("not a valid ID"))
            {
                if let mine {
                    // Marked only if the account's own list says it is revoked (not merely unknown).
                    let listed = try await DeviceCommand.accountCall { try await client.devices() }
                    if listed.first(where: { $0.id == mine.deviceId })?.revokedAt != nil {
                        print("device \(id) was already revoked")
                        markThisDevice(mine)
                        return
                    }
                }
                if let local, local.deviceId == id, mine == nil {
                    throw CLIError.usage(
                        """
                        device \(Terminal.printable(id)) is this directory's device of \(local.username) on \(local.server), but you are signed in \
                        as \(session.username) on \(session.server); nothing was revoked and nothing here was changed (sign in as \(local.username) \
                        to revoke it)
                        """
                    )
                }
                throw CLIError.usage(
                    "no active device \(Terminal.printable(id)) in \(session.username)'s account; `countersign device list` shows them"
                )
            }
            print("revoked device \(id)")
            if let mine { markThisDevice(mine) }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace this device's key; the old one stays in the keyring so older messages still open.",
            discussion: """
                The old key signs for the new one and the new one proves itself (docs/PROTOCOL.md §1). The new key \
                gets the old key's passphrase. People who pinned this device will be asked to trust it again.
                """
        )

        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try DeviceContext(keyOptions: keyOptions)
            let old = try context.currentIdentity()
            let passphrase = try context.currentPassphrase()
            let new = Identity.generate()
            let newFile = try DeviceKeys.keyring.store(new, passphrase: passphrase)
            try context.saveDevice(context.device.beginningRotation(to: newFile))
            do {
                _ = try await context.withSession {
                    try await context.client.rotateKeys(
                        deviceID: context.device.deviceId,
                        old: old,
                        newSigning: new,
                        newEncryptionKey: new.publicKey
                    )
                }
            } catch {
                // Refused: the old key stays current. (A lost answer leaves the new key pending; the next
                // device session finds out which one the server has.)
                if case ClientError.problem = error {
                    try? context.saveDevice(context.device.abandoningRotation())
                    PrivateFiles.remove(PrivateFiles.config.appendingPathComponent(newFile))
                }
                throw error
            }
            let done = context.device.finishingRotation(to: newFile)
            try context.saveDevice(done)
            print("rotated device \(done.deviceId): \(old.publicKey.fingerprint) -> \(new.publicKey.fingerprint)")
            print("the old key stays in \(PrivateFiles.keysDirectory.path) to open messages sealed to it")
        }
    }
}
