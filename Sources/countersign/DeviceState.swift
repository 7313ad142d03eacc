import CountersignClient
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// This config directory's device (`device.json`): the SDK's `DeviceState`, kept by `ConfigDirectory`.
typealias DeviceFile = DeviceState

extension DeviceState {
    static func load() throws -> DeviceFile? { try PrivateFiles.store.loadDevice() }

    /// This directory's device for display and bookkeeping; nil when there is none or it cannot be read.
    static func loadQuietly() -> DeviceFile? {
        do { return try load() } catch { return nil }
    }

    /// This directory's device, or an error saying how to make one. A revoked device only with
    /// `allowRevoked` (reading the messages kept here).
    static func required(allowRevoked: Bool = false) throws -> DeviceFile {
        guard let device = try load() else {
            if let session = (try? SessionFile.load()) ?? nil {
                throw CLIError.usage(
                    "no device in \(PrivateFiles.config.path); signed in as \(session.username), run `countersign device init` to make one"
                )
            }
            throw CLIError.usage(
                "no device in \(PrivateFiles.config.path); run `countersign account login USER --server URL`, then `countersign device init`"
            )
        }
        if let revokedAt = device.revokedAt, !allowRevoked {
            throw CLIError.usage(
                """
                this directory's device \(device.deviceId) ("\(Terminal.printable(device.name))") of \(device.username) was revoked \
                (found \(PrivateFiles.date(revokedAt))); `countersign read ID` still opens the messages kept here; run \
                `countersign device init` to register a new device
                """
            )
        }
        return device
    }

    func save() throws { try PrivateFiles.store.saveDevice(self) }

    /// Forgets the device here (before `device init` replaces a revoked one).
    static func remove() {
        PrivateFiles.store.removeDevice()
        PrivateFiles.store.removeDeviceSession()
    }

    /// The server revoked this device: it can never open a session again. Its session file goes; device.json
    /// stays, marked, so the messages and keys kept here still open offline.
    func markRevoked(now: Date = Date()) {
        if (try? markedRevoked(now: now).save()) == nil { PrivateFiles.store.removeDevice() }
        PrivateFiles.store.removeDeviceSession()
    }

    var keyPath: String { PrivateFiles.config.appendingPathComponent(keyFile).path }
}

/// The device session (`device-session.json`, 0600): the SDK's `StoredDeviceSession`.
typealias DeviceSessionFile = StoredDeviceSession

extension StoredDeviceSession {
    static func load() -> DeviceSessionFile? { (try? PrivateFiles.store.loadDeviceSession()) ?? nil }
    func save() throws { try PrivateFiles.store.saveDeviceSession(self) }
}

/// The config directory's keyring (`keys/<key ID>.key`): the SDK's `Keyring` over `ConfigDirectory`.
enum DeviceKeys {
    static var keyring: Keyring<ConfigDirectory> { Keyring(store: PrivateFiles.store) }

    /// A new key's passphrase: from --passphrase-file, none with --no-passphrase, else asked twice.
    static func newPassphrase(file: String?, none: Bool) throws -> [UInt8]? {
        try Terminal.newPassphrase(
            file: file,
            none: none,
            prompt: "New passphrase for this device's key: ",
            what: "the device key",
            unchanged: "nothing was changed"
        )
    }
}

/// A client for this device: the device session, renewed by signing a fresh nonce when the server no
/// longer accepts it, and the device's keys, unlocked at most once per run.
final class DeviceContext {
    private(set) var device: DeviceFile
    let client: CountersignClient
    let keyOptions: PrivateKeyOptions
    private var identities: [String: Identity] = [:]
    /// The passphrase typed (or read) once, tried on the other key files of the keyring, which share it.
    private var passphrase: [UInt8]?
    /// Set when the passphrase itself is needed (a new key gets it), so the agent cannot stand in for it.
    private var passphraseNeeded = false

    init(keyOptions: PrivateKeyOptions, allowRevoked: Bool = false) throws {
        let device = try DeviceFile.required(allowRevoked: allowRevoked)
        guard let url = URL(string: device.server) else {
            throw CLIError.io("\(PrivateFiles.deviceURL.path) names no valid server")
        }
        let session = DeviceSessionFile.load().flatMap { $0.isUsable(by: device, now: Date()) ? $0 : nil }
        // The account session is optional here: a damaged session.json must not stop message commands.
        let account = ((try? SessionFile.load()) ?? nil).flatMap {
            $0.server == device.server && $0.username == device.username ? $0 : nil
        }
        self.device = device
        client = CountersignClient(server: url, token: account?.token, deviceToken: session?.token)
        self.keyOptions = keyOptions
    }

    var username: String { device.username }

    /// The private key in `path`, asking for its passphrase (once per run) if it is encrypted.
    func identity(at path: String) throws -> Identity {
        if let known = identities[path] { return known }
        let file = try KeyFiles.load(path)
        let identity = try KeyFiles.privateKey(file, keyOptions) { text, ask in
            // The passphrase already given usually fits (rotation keeps it); if not, ask for this key's own.
            if let known = self.passphrase, let identity = try? Identity(pem: text, passphrase: { known }) {
                return identity
            }
            // A running `countersign agent` holds the unlocked key: no passphrase is asked.
            if !self.passphraseNeeded, self.keyOptions.passphraseFile == nil, Identity.isEncrypted(pem: text),
                let held = AgentSocket.identity(forKeyFile: path)
            {
                return held
            }
            return try Identity(pem: text) {
                let typed = try ask()
                self.passphrase = typed
                return typed
            }
        }
        identities[path] = identity
        return identity
    }

    /// The passphrase the current key was unlocked with (nil if it is not encrypted).
    func currentPassphrase() throws -> [UInt8]? {
        let text = try KeyFiles.text(device.keyPath)
        guard Identity.isEncrypted(pem: text) else { return nil }
        if passphrase == nil {
            // Unlocked by the agent (or not yet): the passphrase itself is asked for.
            passphraseNeeded = true
            identities[device.keyPath] = nil
        }
        _ = try identity(at: device.keyPath)
        return passphrase
    }

    func currentIdentity() throws -> Identity { try identity(at: device.keyPath) }

    func saveDevice(_ updated: DeviceFile) throws {
        try updated.save()
        device = updated
    }

    /// Opens a new device session with the current key (or, after an interrupted rotation, the new one).
    func renewSession() async throws {
        let candidates = device.sessionKeyFiles
        for (i, file) in candidates.enumerated() {
            let key = try identity(at: PrivateFiles.config.appendingPathComponent(file).path)
            let session: DeviceSession
            do {
                session = try await client.openDeviceSession(deviceID: device.deviceId, signing: key)
            } catch let e as ClientError where e.code == .deviceRevoked {
                // It can never sign in again: marked here; its keys and stored messages stay readable.
                device.markRevoked()
                device.revokedAt = device.revokedAt ?? Date()
                throw CLIError.usage(
                    """
                    this device (\(device.deviceId), "\(Terminal.printable(device.name))") has been revoked; it is marked so here \
                    (its keys and stored messages stay, and `countersign read ID` still opens them); run `countersign device init` \
                    to register a new one
                    """
                )
            } catch let e as ClientError where e.code == .badSignature && i + 1 < candidates.count {
                continue
            }
            if i > 0 {
                // The server had taken the rotation before this device recorded it: finish recording it.
                try saveDevice(device.finishingRotation(to: file))
            }
            try DeviceSessionFile(deviceId: device.deviceId, token: session.token, expiresAt: session.expiresAt).save()
            return
        }
    }

    /// Runs `call` with a device session, opening one first if there is none and once more if the server
    /// says the session ended (expired, idle, or signed out everywhere).
    func withSession<T>(_ call: () async throws -> T) async throws -> T {
        if client.deviceToken == nil { try await renewSession() }
        do {
            return try await call()
        } catch let e as ClientError where e.code == .unauthenticated || e == .noDeviceSession {
            try await renewSession()
            return try await call()
        }
    }
}

extension DeviceContext {
    /// A device's name when none is given: the host name, within the server's 1 to 64 characters.
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "countersign" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .trimmingCharacters(in: .whitespaces)
        return name.isEmpty ? "countersign" : String(name.prefix(64))
    }
}
