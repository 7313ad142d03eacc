import CountersignClient
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// This config directory's device (`device.json`): which account and server it belongs to, its ID, and
/// its key files, relative to the config directory.
struct DeviceFile: Codable {
    var server: String
    var username: String
    var deviceId: String
    var name: String
    /// The current key: `keys/<key ID in hex>.key`, one P-256 identity for signing and encryption.
    var keyFile: String
    /// Keys this device had before rotations, kept so that messages sealed to them still open.
    var oldKeyFiles: [String]
    /// Set while a rotation is in flight: the new key, which the server may already have accepted.
    var pendingKeyFile: String?
    var createdAt: Date
    /// When this directory learnt that the server revoked the device. The file stays, so `read` still opens
    /// the messages kept here with the keys it lists; nothing else runs with it.
    var revokedAt: Date?

    static func load() throws -> DeviceFile? { try PrivateFiles.readJSON(DeviceFile.self, at: PrivateFiles.deviceURL) }

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

    func save() throws { try PrivateFiles.writeJSON(self, to: PrivateFiles.deviceURL) }

    /// Forgets the device here (before `device init` replaces a revoked one).
    static func remove() {
        PrivateFiles.remove(PrivateFiles.deviceURL)
        PrivateFiles.remove(PrivateFiles.deviceSessionURL)
    }

    /// The server revoked this device: it can never open a session again. Its session file goes; device.json
    /// stays, marked, so the messages and keys kept here still open offline.
    func markRevoked(now: Date = Date()) {
        var marked = self
        marked.revokedAt = revokedAt ?? now
        if (try? marked.save()) == nil { PrivateFiles.remove(PrivateFiles.deviceURL) }
        PrivateFiles.remove(PrivateFiles.deviceSessionURL)
    }

    var keyPath: String { PrivateFiles.config.appendingPathComponent(keyFile).path }
    /// The current key's ID in hex, from its file name (`keys/<key ID>.key`).
    var keyID: String { String((keyFile as NSString).lastPathComponent.dropLast(4)) }
}

/// The device session (`device-session.json`, 0600): the bearer token message calls carry.
struct DeviceSessionFile: Codable {
    var deviceId: String
    var token: String
    var expiresAt: Date

    static func load() -> DeviceSessionFile? {
        try? PrivateFiles.readJSON(DeviceSessionFile.self, at: PrivateFiles.deviceSessionURL)
    }
    func save() throws { try PrivateFiles.writeJSON(self, to: PrivateFiles.deviceSessionURL) }
}

/// Key files in `<config>/keys/`, named by key ID (hex), so the key an envelope is sealed to is found
/// without unlocking any other.
enum Keyring {
    static func relativePath(_ key: PublicKey) -> String { "keys/\(Hex.encode(key.fingerprint.bytes)).key" }

    static func path(keyID: Fingerprint) -> String? {
        let path = PrivateFiles.keysDirectory.appendingPathComponent("\(Hex.encode(keyID.bytes)).key").path
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// Writes a new identity's key file (never over an existing one) and returns its path relative to
    /// the config directory.
    static func store(_ identity: Identity, passphrase: [UInt8]?) throws -> String {
        let relative = relativePath(identity.publicKey)
        try PrivateFiles.directory(PrivateFiles.keysDirectory)
        try PrivateFiles.write(
            Array(try identity.pem(passphrase: passphrase).utf8),
            to: PrivateFiles.config.appendingPathComponent(relative),
            replace: false
        )
        return relative
    }

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
        let session = DeviceSessionFile.load().flatMap {
            $0.deviceId == device.deviceId && $0.expiresAt > Date() ? $0 : nil
        }
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
        let candidates = [device.keyFile] + (device.pendingKeyFile.map { [$0] } ?? [])
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
                var updated = device
                updated.oldKeyFiles.append(updated.keyFile)
                updated.keyFile = file
                updated.pendingKeyFile = nil
                try saveDevice(updated)
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
