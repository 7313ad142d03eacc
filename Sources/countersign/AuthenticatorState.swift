import CountersignClient
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// This config directory as an authenticator (`authenticator.json`, mode 0600): the SDK's
/// `CountersignAuthenticator.State` (server, device, account, device session, the server's challenge key,
/// the TOTP secret sealed to the key, docs/SPEC.md §10) and the key file of the P-256 identity it was paired with. A config directory holds
/// one identity: a messaging device (`device.json`) or an authenticator, never both.
struct AuthenticatorFile: Codable {
    var state: CountersignAuthenticator.State
    var name: String
    /// `keys/<key ID in hex>.key`, relative to the config directory, as `device init` stores keys.
    var keyFile: String
    var pairedAt: Date
    /// Set when a session token kept in clear (an earlier version's file) was sealed: the next command that
    /// reaches the server ends that session and opens another, so a copy of the old file opens nothing.
    var replaceSession: Bool?

    static var url: URL { PrivateFiles.config.appendingPathComponent("authenticator.json") }
    static var logURL: URL { PrivateFiles.config.appendingPathComponent("authenticator.log") }

    static func load() throws -> AuthenticatorFile? { try PrivateFiles.readJSON(AuthenticatorFile.self, at: url) }

    /// This directory's authenticator, or an error saying how to pair one.
    static func required() throws -> AuthenticatorFile {
        guard let file = try load() else {
            if FileManager.default.fileExists(atPath: PrivateFiles.deviceURL.path) {
                throw CLIError.usage(
                    """
                    \(PrivateFiles.config.path) is a messaging device (device.json), not an authenticator; pair an authenticator in a \
                    config directory of its own: COUNTERSIGN_CONFIG_DIR=DIR countersign authenticator pair KEY
                    """
                )
            }
            throw CLIError.usage(
                """
                no authenticator in \(PrivateFiles.config.path); make a pairing key with `countersign account mfa pairing-key` \
                (signed in), then run `countersign authenticator pair KEY` here
                """
            )
        }
        return file
    }

    func save() throws { try PrivateFiles.writeJSON(self, to: Self.url) }

    static func remove() { PrivateFiles.remove(url) }

    var keyPath: String { PrivateFiles.config.appendingPathComponent(keyFile).path }

    /// For `device init`: refuses when this directory already is an authenticator.
    static func refuseDevice() throws {
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        let who = (try? load()).map { " paired for \($0.state.username) on \($0.state.server)" } ?? ""
        throw CLIError.usage(
            """
            \(PrivateFiles.config.path) is an authenticator\(who) (authenticator.json); a config directory holds one identity: \
            make the device in a directory of its own (COUNTERSIGN_CONFIG_DIR=DIR countersign device init)
            """
        )
    }
}

/// The authenticator's own log (`authenticator.log`, 0600): one line per thing it did, newest last,
/// kept to the last `maxLines`. `authenticator logs send` uploads it (the SDK masks credentials first).
enum AuthenticatorLog {
    static let maxLines = 500

    static func lines() -> [String] {
        guard let data = FileManager.default.contents(atPath: AuthenticatorFile.logURL.path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Appends a line; a log that cannot be written never fails the command.
    static func append(_ text: String) {
        let line = "\(PrivateFiles.date(Date())) \(Terminal.printable(text))"
        let kept = (lines() + [line]).suffix(maxLines)
        try? PrivateFiles.write(Array((kept.joined(separator: "\n") + "\n").utf8), to: AuthenticatorFile.logURL)
    }
}

/// An authenticator loaded from this directory: its key unlocked (the SDK signs answers and opens device
/// sessions with it) and its device session renewed when the server no longer accepts it.
final class AuthenticatorContext {
    private(set) var file: AuthenticatorFile
    let identity: Identity
    let authenticator: CountersignAuthenticator

    init(keyOptions: PrivateKeyOptions) throws {
        let file = try AuthenticatorFile.required()
        let identity = try KeyFiles.privateKey(KeyFiles.load(file.keyPath), keyOptions) { text, ask in
            // A running `countersign agent` holds the unlocked key: no passphrase is asked.
            if keyOptions.passphraseFile == nil, Identity.isEncrypted(pem: text),
                let held = AgentSocket.identity(forKeyFile: file.keyPath)
            {
                return held
            }
            return try Identity(pem: text, passphrase: ask)
        }
        self.identity = identity
        do {
            authenticator = try CountersignAuthenticator(state: file.state, identity: identity)
        } catch {
            throw CLIError.io(
                "\(AuthenticatorFile.url.path) is damaged (\(error)); pair again in a fresh config directory"
            )
        }
        var current = file
        current.state = authenticator.state
        self.file = current
        if authenticator.stateWasInClear {
            // An earlier version stored the TOTP secret in clear: sealed now, under the key just unlocked.
            if file.state.sessionToken != nil { current.replaceSession = true }
            self.file = current
            try current.save()
            AuthenticatorLog.append("sealed the passcode secret and session token under the authenticator's key")
            Terminal.warn(
                """
                note: \(AuthenticatorFile.url.path) kept this authenticator's passcode secret or session token in clear (an earlier \
                version); they are now sealed to the authenticator's key (\(PrivateFiles.config.appendingPathComponent(file.keyFile).path)). \
                Copies or backups of the old file still hold them in clear: the session token is replaced by the next command \
                that reaches the server, and a new pairing in a fresh directory replaces the passcode secret
                """
            )
        }
    }

    var client: CountersignClient { authenticator.client }
    var username: String { file.state.username }

    /// A new device session signed with the authenticator's key; its token is saved for the next run.
    func renewSession() async throws {
        do {
            let session = try await client.openDeviceSession(deviceID: file.state.deviceId, signing: identity)
            file.state = try authenticator.state(withSessionToken: session.token)
            file.replaceSession = nil
            try file.save()
        } catch let e as ClientError where e.code == .deviceRevoked || e.code == .badSignature {
            throw CLIError.usage(
                """
                this authenticator (\(file.state.deviceId), "\(Terminal.printable(file.name))") is no longer paired with \(file.state.username) \
                (revoked, or multi-factor sign-in was turned off); make a new pairing key and pair again in a fresh config directory, \
                or move \(AuthenticatorFile.url.path) away first
                """
            )
        }
    }

    /// Runs `call` with the device session, renewing it once when the server says it has ended.
    func withSession<T>(_ call: () async throws -> T) async throws -> T {
        if file.replaceSession == true {
            // The token once kept in clear: its session ends (whatever the answer) and a new one is opened.
            try? await client.closeDeviceSession()
            try await renewSession()
            AuthenticatorLog.append("replaced the device session whose token was kept in clear")
        }
        do {
            return try await call()
        } catch let e as ClientError where e.code == .unauthenticated || e == .noDeviceSession {
            try await renewSession()
            return try await call()
        }
    }
}
