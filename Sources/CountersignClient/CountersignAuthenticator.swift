import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import JWTKit

/// The device side of multi-factor sign-in, in the shape of PingOne's MFA SDK (docs/PROTOCOL.md §3):
/// `pair`, incoming notifications to approve (with the number) or deny, `oneTimePasscode()`,
/// `authenticate(authCode:)`, `allowPushNotifications(_:)`, `sendLogs`. What it must keep between runs
/// (`State`) is the caller's to store; `removeLocalData()` is the caller deleting it.
public final class CountersignAuthenticator: Sendable {
    /// What an authenticator keeps: its device, its keys' owner, the server's challenge key, its TOTP
    /// secret and device session token. Both are kept sealed to the device's own key (`sealedTotpSecret`,
    /// `sealedSessionToken`, docs/SPEC.md §10), so a copy of the stored state without the unlocked key
    /// shows no passcodes and opens no session; `totpSecret` and `sessionToken` (in clear) are only read,
    /// from states stored before sealing existed.
    public struct State: Codable, Sendable {
        public var server: String
        public var deviceId: String
        public var username: String
        /// An earlier version's device session token in clear; never written by this one.
        public var sessionToken: String?
        /// The device session token (30 days) sealed to this device's key, context
        /// `sessionTokenContext(deviceId)`.
        public var sealedSessionToken: Base64URL?
        public var challengeKey: ChallengeKeySet.Key
        /// An earlier version's TOTP secret in clear; never written by this one.
        public var totpSecret: Base64URL?
        /// The TOTP secret sealed to this device's key (§10), context `totpSecretContext(deviceId)`.
        public var sealedTotpSecret: Base64URL?
        public var totpPeriod: Int
    }

    /// What the sealed TOTP secret is bound to: its purpose and the device, so it opens nowhere else.
    static func totpSecretContext(_ deviceId: String) -> String {
        "countersign/v1 authenticator TOTP secret\u{0}" + deviceId
    }

    /// What the sealed session token is bound to, as the TOTP secret's context.
    static func sessionTokenContext(_ deviceId: String) -> String {
        "countersign/v1 authenticator session token\u{0}" + deviceId
    }

    /// The state to store: the TOTP secret and the session token sealed, never in clear.
    public let state: State
    /// True when the state given held the TOTP secret or the session token in clear (stored by an earlier
    /// version): store `state` again to keep them sealed from now on.
    public let stateWasInClear: Bool
    public let client: CountersignClient
    let identity: Identity
    let serverKey: ES256PublicKey
    let totpSecret: [UInt8]

    /// Throws `SecretAtRest.Failure` when the sealed secret does not open with `identity` (another
    /// device's state, or altered), and `PingOneError.configureError` when the state has no secret.
    public init(state: State, identity: Identity) throws {
        self.identity = identity
        guard let url = URL(string: state.server) else { throw PingOneError.configureError }
        let context = Self.totpSecretContext(state.deviceId)
        var stored = state
        var inClear = false
        if let sealed = state.sealedTotpSecret {
            totpSecret = try SecretAtRest.open(sealed.bytes, with: identity, context: context)
        } else if let clear = state.totpSecret {
            totpSecret = clear.bytes
            stored.sealedTotpSecret = Base64URL(
                try SecretAtRest.seal(clear.bytes, to: identity.publicKey, context: context)
            )
            inClear = true
        } else {
            throw PingOneError.configureError
        }
        let token: String
        if let sealed = state.sealedSessionToken {
            let opened = try SecretAtRest.open(
                sealed.bytes,
                with: identity,
                context: Self.sessionTokenContext(state.deviceId)
            )
            token = String(decoding: opened, as: UTF8.self)
        } else if let clear = state.sessionToken {
            token = clear
            stored.sealedSessionToken = try Self.seal(sessionToken: clear, deviceId: state.deviceId, identity: identity)
            inClear = true
        } else {
            throw PingOneError.configureError
        }
        // A file with a sealed and a clear copy is rewritten too: the clear one must go.
        if state.totpSecret != nil || state.sessionToken != nil { inClear = true }
        stored.totpSecret = nil
        stored.sessionToken = nil
        stateWasInClear = inClear
        self.state = stored
        client = CountersignClient(server: url, deviceToken: token)
        serverKey = try ES256PublicKey(parameters: (x: state.challengeKey.x, y: state.challengeKey.y))
    }

    /// PingOne's `pair(_:)`: pairs this device (its `identity` signs and receives) using a pairing key,
    /// bare or as `countersign://pair?key=…&server=…` (whose server wins over `server`).
    public static func pair(
        _ pairingKey: String,
        server: URL?,
        name: String,
        identity: Identity
    ) async throws -> (CountersignAuthenticator, PairingInfo) {
        var serverURL = server
        var keyText = pairingKey.trimmingCharacters(in: .whitespacesAndNewlines)
        if let c = URLComponents(string: keyText), c.scheme != nil, let items = c.queryItems {
            if let s = items.first(where: { $0.name == "server" })?.value, let u = URL(string: s) { serverURL = u }
            guard let k = items.first(where: { $0.name == "key" })?.value else { throw PingOneError.pairingKey }
            keyText = k
        }
        let key = keyText.uppercased().filter { $0 != "-" && $0 != " " }
        guard key.count == 12 else { throw PingOneError.pairingKey }
        guard let serverURL else { throw PingOneError.configureError }
        return try await pair(normalizedKey: key, serverURL: serverURL, name: name, identity: identity)
    }

    /// Pairs with `key` as the server reads it: 12 symbols normalised, or a pairing grant (§6.11).
    static func pair(
        normalizedKey key: String,
        serverURL: URL,
        name: String,
        identity: Identity
    ) async throws -> (CountersignAuthenticator, PairingInfo) {
        let message = DeviceProof.pairingMessage(
            pairingKey: key,
            signingKey: identity.publicKey,
            encryptionKey: identity.publicKey
        )
        let request = PairingRequest(
            pairingKey: key,
            name: name,
            signingKey: Base64URL(identity.publicKey.spkiDER),
            encryptionKey: Base64URL(identity.publicKey.spkiDER),
            signature: Base64URL(try identity.signature(for: message))
        )
        let client = CountersignClient(server: serverURL)
        let info: PairingInfo
        do {
            info = try await client.send("POST", "/v1/authenticators", body: request, as: PairingInfo.self)
        } catch let e as ClientError where e.code == .pairingKeyInvalid {
            throw PingOneError.pairingKey
        }
        guard let jwk = info.jwks.keys.first, let x = Base64URL(text: jwk.x), let y = Base64URL(text: jwk.y),
            let serverPublic = try? PublicKey(point: [0x04] + x.bytes + y.bytes)
        else { throw PingOneError.trustFailed }
        // The secret comes sealed to this device and signed by the server's challenge key: opened only
        // if that signature holds.
        let envelope = try MessageEnvelope(bytes: info.totp.envelope.bytes)
        let secret = try envelope.open(with: identity, from: serverPublic).plaintext
        let state = State(
            server: serverURL.absoluteString,
            deviceId: info.deviceId,
            username: info.username,
            sessionToken: nil,
            sealedSessionToken: try seal(sessionToken: info.session.token, deviceId: info.deviceId, identity: identity),
            challengeKey: jwk,
            totpSecret: nil,
            sealedTotpSecret: Base64URL(
                try SecretAtRest.seal(secret, to: identity.publicKey, context: totpSecretContext(info.deviceId))
            ),
            totpPeriod: info.totp.period
        )
        return (try CountersignAuthenticator(state: state, identity: identity), info)
    }

    static func seal(sessionToken: String, deviceId: String, identity: Identity) throws -> Base64URL {
        Base64URL(
            try SecretAtRest.seal(
                Array(sessionToken.utf8),
                to: identity.publicKey,
                context: sessionTokenContext(deviceId)
            )
        )
    }

    // MARK: Approving new devices (docs/PROTOCOL.md §1.2)

    /// The code this authenticator shows so that a device of the account can endorse it as an approver of
    /// new devices: the link code of its keys (one key for both).
    public var approverCode: String {
        DeviceProof.linkCode(signingKey: identity.publicKey, encryptionKey: identity.publicKey)
    }

    /// The account's key directory, as this authenticator reads it (its endorsement is in `approvers`).
    public func directory() async throws -> UserDirectory {
        try await client.directory(username: state.username)
    }

    /// Whether a device of the account endorsed this authenticator's current key, by that device's ID.
    public static func endorsement(in directory: UserDirectory, of deviceID: String) -> ApproverEndorsement? {
        directory.approvers?.first { $0.id == deviceID }?.endorsement
    }

    /// Approves (links) the new device `device` as the directory lists it, once endorsed: signs the vouch
    /// with this authenticator's key at `now`. Compare `CountersignClient.linkCode(of:)` with the code the
    /// new device shows first.
    public func vouchDevice(_ device: DirectoryDevice, now: Date = Date()) async throws -> Device {
        try await client.vouchDevice(
            device,
            username: state.username,
            voucherDeviceID: state.deviceId,
            voucher: identity,
            now: now
        )
    }

    /// `state` with `token` (a renewed device session) as its session, sealed: the state to store next.
    public func state(withSessionToken token: String) throws -> State {
        var next = state
        next.sealedSessionToken = try Self.seal(sessionToken: token, deviceId: state.deviceId, identity: identity)
        next.sessionToken = nil
        return next
    }

    // MARK: Passcodes

    /// PingOne's `getOneTimePasscode`: this authenticator's current passcode and its window.
    public func oneTimePasscode(at now: Date = Date()) throws -> OneTimePasscodeInfo {
        let otp = try OTPGenerator(secret: totpSecret, algorithm: .sha1, digits: 6, period: state.totpPeriod)
        let step = otp.step(at: now)
        let from = Double(step) * Double(state.totpPeriod)
        return OneTimePasscodeInfo(
            passcode: otp.code(counter: step),
            validFrom: from,
            validUntil: from + Double(state.totpPeriod),
            timeWindowSize: state.totpPeriod
        )
    }

    // MARK: Push approvals

    /// A challenge checked against the server's key, as a notification to show and answer; nil when the
    /// token is not the server's, not for this device, or expired.
    public func notification(from jwt: String, now: Date = Date()) async -> NotificationObject? {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: serverKey)
        guard let claims = try? await keys.verify(jwt, as: ClaimsPayload<ChallengeClaims>.self).claims,
            claims.aud == state.deviceId, Double(claims.exp) > now.timeIntervalSince1970
        else { return nil }
        return NotificationObject(authenticator: self, claims: claims)
    }

    /// The challenges waiting for this device (for an authenticator that polls instead of holding the
    /// push channel).
    public func pendingNotifications() async throws -> [NotificationObject] {
        var out: [NotificationObject] = []
        let list = try await client.send(
            "GET",
            "/v1/authenticator/challenges",
            as: PushChallengeList.self,
            credential: .device
        )
        for c in list.challenges {
            if let n = await notification(from: c.jwt) { out.append(n) }
        }
        return out
    }

    /// Signs and sends the answer; the transaction's status after it.
    func answer(_ claims: ChallengeClaims, approve: Bool, number: String?, report: Bool) async throws -> String {
        let answer = AnswerClaims(
            iss: state.deviceId,
            aud: claims.iss,
            txn: claims.txn,
            nonce: claims.nonce,
            iat: Int64(Date().timeIntervalSince1970),
            decision: approve ? "APPROVE" : "DENY",
            number: approve ? number : nil,
            report: approve ? nil : report
        )
        let keys = JWTKeyCollection()
        await keys.add(
            ecdsa: try ES256PrivateKey(backing: P256.Signing.PrivateKey(rawRepresentation: identity.privateScalar))
        )
        let jwt = try await keys.sign(ClaimsPayload(claims: answer))
        do {
            return try await client.send(
                "POST",
                "/v1/authenticator/answers",
                body: PushAnswer(jwt: jwt),
                as: PushAnswerResult.self,
                credential: .device
            ).status
        } catch let e as ClientError where e.code == .answerRefused {
            if case .problem(let p) = e, p.pingOneError == 10009 { throw PingOneError.pushConfirmationTimeout }
            throw PingOneError.failedPolicyRequirements
        }
    }

    /// PingOne's `allowPushNotifications(_:)`.
    public func allowPushNotifications(_ allowed: Bool) async throws {
        _ = try await client.send(
            "PUT",
            "/v1/authenticator/push",
            body: PushPermission(allowed: allowed),
            as: PushPermission.self,
            credential: .device
        )
    }

    /// PingOne's `sendLogs`: uploads these lines, with anything that looks like a credential masked
    /// first, and returns the support id to quote.
    public func sendLogs(_ lines: [String]) async throws -> String {
        let redacted = lines.map(Self.redact).joined(separator: "\n")
        return try await client.send(
            "POST",
            "/v1/authenticator/logs",
            body: LogUpload(text: redacted),
            as: LogReceipt.self,
            credential: .device
        ).supportId
    }

    /// Tokens, keys and JWTs never leave the device in logs.
    static func redact(_ line: String) -> String {
        var out = line
        for pattern in [
            #"cs[dbt]?_[A-Za-z0-9_-]{20,}"#, #"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"#,
            #"-----BEGIN[^-]*-----[^-]*-----END[^-]*-----"#,
        ] {
            out = out.replacingOccurrences(of: pattern, with: "[redacted]", options: .regularExpression)
        }
        return out
    }

    // MARK: Authentication codes

    /// PingOne's `authenticate(authCode)`: claims the code (bare or inside a URI).
    public func authenticate(authCode: String) async throws -> AuthenticationSession {
        do {
            let object = try await client.send(
                "POST",
                "/v1/authenticator/auth-codes",
                body: AuthCodeClaim(code: authCode),
                as: AuthenticationObject.self,
                credential: .device
            )
            return AuthenticationSession(authenticator: self, code: authCode, object: object)
        } catch let e as ClientError where e.code == .authCodeInvalid {
            throw PingOneError.authCodeInvalid
        }
    }

    func authCode(_ code: String, action: String, userId: String?) async throws -> AuthenticationObject {
        do {
            return try await client.send(
                "POST",
                "/v1/authenticator/auth-codes/\(action)",
                body: AuthCodeClaim(code: code, userId: userId),
                as: AuthenticationObject.self,
                credential: .device
            )
        } catch let e as ClientError where e.code == .authCodeInvalid {
            throw PingOneError.authCodeInvalid
        }
    }
}

/// PingOne's `NotificationObject`: one push challenge, checked, to approve with the number or deny.
public struct NotificationObject: Sendable {
    let authenticator: CountersignAuthenticator
    public let claims: ChallengeClaims

    public var transactionID: String { claims.txn }
    public var username: String { claims.sub }
    /// ENTER_MANUALLY or SELECT_NUMBER.
    public var numberMatchingType: String { claims.nm.type }
    /// SELECT_NUMBER: the three numbers to choose from.
    public var numberMatchingOptions: [String] { claims.nm.options ?? [] }
    /// Who asked: address, user agent, time.
    public var clientContext: ClientContextClaim { claims.ctx }
    /// True when an already signed-in session asks to confirm a sensitive change, not a new sign-in.
    public var isReauthentication: Bool { claims.purpose == ChallengeClaims.reauthentication }
    public var expiresAt: Date { Date(timeIntervalSince1970: TimeInterval(claims.exp)) }

    /// Approves with the number the user typed or picked; returns the sign-in's status (COMPLETED, or
    /// FAILED for a wrong number).
    public func approve(numberMatchingPickedValue: String?) async throws -> String {
        try await authenticator.answer(claims, approve: true, number: numberMatchingPickedValue, report: false)
    }

    /// Denies; `report` says "this wasn't me" (push is then suspended for the account).
    public func deny(report: Bool = false) async throws -> String {
        try await authenticator.answer(claims, approve: false, number: nil, report: report)
    }
}

/// PingOne's `AuthenticationObject` with its actions.
public struct AuthenticationSession: Sendable {
    let authenticator: CountersignAuthenticator
    let code: String
    public let object: AuthenticationObject
    public var users: [AuthenticationObject.User] { object.users }
    public var userApproval: String { object.userApproval }
    public var status: String { object.status }

    /// COMPLETED, or EXPIRED when too late.
    public func approve(userId: String) async throws -> String {
        try await authenticator.authCode(code, action: "approve", userId: userId).status
    }
    /// DENIED, or EXPIRED when too late.
    public func deny() async throws -> String {
        try await authenticator.authCode(code, action: "deny", userId: nil).status
    }
}

/// PingOne's `OneTimePasscodeInfo`.
public struct OneTimePasscodeInfo: Equatable, Sendable {
    public var passcode: String
    /// Epoch seconds.
    public var validFrom: Double
    public var validUntil: Double
    /// Seconds a passcode lives.
    public var timeWindowSize: Int
}

/// PingOne MFA SDK's error numbers (docs/PROTOCOL.md §3.10), for the cases that fit.
public enum PingOneError: Int, Error, Sendable, CustomStringConvertible {
    case internalError = 10000
    case deviceTokenIsMissing, unrecognizedRemoteNotification, serverError, noConnectivity, pairingKey, bundleId,
        pairingKeyDataCenterMismatch, deviceIsNotPaired, pushConfirmationTimeout, passcodeNotValid, authCodeInvalid,
        failedPolicyRequirements,
        pairingAlreadyRunning, migrationAlreadyRunning, migrationNotNeeded, testPushAlreadyRunning, trustFailed,
        configureError, cantUpdateGeo,
        authCanceled

    public var description: String {
        switch self {
        case .pairingKey: "\(rawValue) pairingKey: the pairing key is wrong, used or expired; create a new one"
        case .pushConfirmationTimeout:
            "\(rawValue) pushConfirmationTimeout: the sign-in request expired before the answer"
        case .authCodeInvalid:
            "\(rawValue) authCodeInvalid: the code is unknown, expired or claimed by another authenticator"
        case .failedPolicyRequirements:
            "\(rawValue) failedPolicyRequirements: the server refused the answer (already answered, or not for this device)"
        case .trustFailed: "\(rawValue) trustFailed: the server's keys could not be checked"
        case .configureError: "\(rawValue) configureError: no server to talk to"
        case .deviceIsNotPaired: "\(rawValue) deviceIsNotPaired"
        case .unrecognizedRemoteNotification:
            "\(rawValue) unrecognizedRemoteNotification: the notification is not a sign-in request of Countersign's for this device"
        // Named from the table, not "\(self)": that is this very description, and recursed until the stack ran out.
        default: "\(rawValue) \(Self.names[rawValue - 10000])"
        }
    }

    private static let names = [
        "internalError", "deviceTokenIsMissing", "unrecognizedRemoteNotification", "serverError", "noConnectivity",
        "pairingKey", "bundleId", "pairingKeyDataCenterMismatch", "deviceIsNotPaired", "pushConfirmationTimeout",
        "passcodeNotValid", "authCodeInvalid", "failedPolicyRequirements", "pairingAlreadyRunning",
        "migrationAlreadyRunning", "migrationNotNeeded", "testPushAlreadyRunning", "trustFailed", "configureError",
        "cantUpdateGeo", "authCanceled",
    ]
}

/// Claims as a jwt-kit payload with the same JSON; times are checked by the caller.
struct ClaimsPayload<Claims: Codable & Sendable>: JWTPayload {
    var claims: Claims
    init(claims: Claims) { self.claims = claims }
    init(from decoder: any Decoder) throws { claims = try Claims(from: decoder) }
    func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
