#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Multi-factor sign-in (docs/PROTOCOL.md §3). Statuses and words are PingOne's.

/// `POST /v1/sessions` when the account has a second factor: no session yet, a transaction to finish.
/// HTTP 202. `binding` is the bearer credential of the transaction's own routes: only the client that
/// sent the password holds it, so only that client can collect the session.
public struct MFARequired: Codable, Equatable, Sendable {
    public var transaction: MFATransactionView
    public var binding: String
    public init(transaction: MFATransactionView, binding: String) {
        self.transaction = transaction
        self.binding = binding
    }
}

/// A sign-in's second factor as the signing-in client sees it.
public struct MFATransactionView: Codable, Equatable, Sendable {
    public var id: String
    /// PUSH_CONFIRMATION_REQUIRED, OTP_REQUIRED, COMPLETED, FAILED or PUSH_CONFIRMATION_TIMED_OUT.
    public var status: String
    /// What may finish it now: `push`, `totp`, `recoveryCode`.
    public var methods: [String]
    public var expiresAt: Date
    /// With push: what to show, and how the authenticator's user answers.
    public var numberMatching: NumberMatchingView?
    /// FAILED: `denied`, `reported`, `wrong-number` or `too-many-codes`.
    public var failure: String?
    /// Passcode or recovery code attempts left before FAILED.
    public var attemptsLeft: Int?
    public init(
        id: String,
        status: String,
        methods: [String],
        expiresAt: Date,
        numberMatching: NumberMatchingView?,
        failure: String?,
        attemptsLeft: Int?
    ) {
        self.id = id
        self.status = status
        self.methods = methods
        self.expiresAt = expiresAt
        self.numberMatching = numberMatching
        self.failure = failure
        self.attemptsLeft = attemptsLeft
    }
}

public struct NumberMatchingView: Codable, Equatable, Sendable {
    /// ENTER_MANUALLY or SELECT_NUMBER.
    public var type: String
    /// The number the sign-in side shows ("Number to match: 42").
    public var number: String
    public init(type: String, number: String) {
        self.type = type
        self.number = number
    }
}

/// `POST /v1/mfa/transactions/{id}/otp` and `/recovery-code`.
public struct MFACodeRequest: Codable, Sendable {
    public var code: String
    public init(code: String) { self.code = code }
}

// MARK: Account settings (account session)

public struct AuthenticatorInfo: Codable, Equatable, Sendable {
    public var deviceId: String
    public var name: String
    public var pairedAt: Date
    /// PingOne's `allowPushNotifications`.
    public var pushAllowed: Bool
    public init(deviceId: String, name: String, pairedAt: Date, pushAllowed: Bool) {
        self.deviceId = deviceId
        self.name = name
        self.pairedAt = pairedAt
        self.pushAllowed = pushAllowed
    }
}

/// `GET /v1/me/mfa`.
public struct MFAStatus: Codable, Equatable, Sendable {
    public var enabled: Bool
    public var authenticators: [AuthenticatorInfo]
    public var totpApp: Bool
    public var recoveryCodesLeft: Int
    /// After a "this wasn't me" report, until the account signs in another way.
    public var pushSuspended: Bool
    public var numberMatching: String
    public var numberDigits: Int
    public init(
        enabled: Bool,
        authenticators: [AuthenticatorInfo],
        totpApp: Bool,
        recoveryCodesLeft: Int,
        pushSuspended: Bool,
        numberMatching: String,
        numberDigits: Int
    ) {
        self.enabled = enabled
        self.authenticators = authenticators
        self.totpApp = totpApp
        self.recoveryCodesLeft = recoveryCodesLeft
        self.pushSuspended = pushSuspended
        self.numberMatching = numberMatching
        self.numberDigits = numberDigits
    }
}

/// `POST /v1/me/mfa/pairing-keys` (re-authentication).
public struct PairingKeyResponse: Codable, Equatable, Sendable {
    /// 12 characters; shown grouped as ABCD-EFGH-JKMN.
    public var key: String
    public var uri: String
    public var expiresAt: Date
    public init(key: String, uri: String, expiresAt: Date) {
        self.key = key
        self.uri = uri
        self.expiresAt = expiresAt
    }
}

/// `POST /v1/me/mfa/totp` (re-authentication): an authenticator app's secret, not active until confirmed.
public struct TOTPEnrollment: Codable, Equatable, Sendable {
    /// Base32 (RFC 4648, no padding), as authenticator apps take it.
    public var secret: String
    public var uri: String
    public init(secret: String, uri: String) {
        self.secret = secret
        self.uri = uri
    }
}

/// `POST /v1/me/mfa/recovery-codes` (re-authentication): shown once.
public struct RecoveryCodeList: Codable, Equatable, Sendable {
    public var codes: [String]
    public init(codes: [String]) { self.codes = codes }
}

/// `PUT /v1/me/mfa/settings`.
public struct MFASettings: Codable, Equatable, Sendable {
    /// ENTER_MANUALLY or SELECT_NUMBER.
    public var numberMatching: String
    /// 2, or 6 (NIST SP 800-63B-4's minimum for a transferred secret).
    public var numberDigits: Int
    public init(numberMatching: String, numberDigits: Int) {
        self.numberMatching = numberMatching
        self.numberDigits = numberDigits
    }
}

// MARK: Authenticators (device side)

/// `POST /v1/authenticators`: pairs a new authenticator with a pairing key; no session needed (the key is
/// the credential). `signature` is over the pairing message of docs/PROTOCOL.md §3.
public struct PairingRequest: Codable, Sendable {
    public var pairingKey: String
    public var name: String
    public var signingKey: Base64URL
    public var encryptionKey: Base64URL
    public var signature: Base64URL
    public init(pairingKey: String, name: String, signingKey: Base64URL, encryptionKey: Base64URL, signature: Base64URL)
    {
        self.pairingKey = pairingKey
        self.name = name
        self.signingKey = signingKey
        self.encryptionKey = encryptionKey
        self.signature = signature
    }
}

/// PingOne's `PairingInfo`, and what the new authenticator needs to work.
public struct PairingInfo: Codable, Equatable, Sendable {
    public struct Authenticator: Codable, Equatable, Sendable {
        /// `push` or `oneTimePasscode`.
        public var type: String
        /// COMPLETED or FAILED.
        public var status: String
        public var errorCode: Int?
        public var errorMessage: String?
        public init(type: String, status: String, errorCode: Int? = nil, errorMessage: String? = nil) {
            self.type = type
            self.status = status
            self.errorCode = errorCode
            self.errorMessage = errorMessage
        }
    }
    public var authenticators: [Authenticator]
    public var deviceId: String
    public var username: String
    /// A device session for the new authenticator (push channel, answers).
    public var session: DeviceSession
    /// The server's challenge-signing keys (RFC 7517 JWKS, ES256).
    public var jwks: ChallengeKeySet
    /// The TOTP secret, sealed to the authenticator's encryption key (a §8 envelope), and its parameters.
    public var totp: SealedTOTP
    public init(
        authenticators: [Authenticator],
        deviceId: String,
        username: String,
        session: DeviceSession,
        jwks: ChallengeKeySet,
        totp: SealedTOTP
    ) {
        self.authenticators = authenticators
        self.deviceId = deviceId
        self.username = username
        self.session = session
        self.jwks = jwks
        self.totp = totp
    }
}

public struct ChallengeKeySet: Codable, Equatable, Sendable {
    public struct Key: Codable, Equatable, Sendable {
        public var kty: String, crv: String, x: String, y: String, kid: String, alg: String, use: String
        public init(
            kty: String = "EC",
            crv: String = "P-256",
            x: String,
            y: String,
            kid: String,
            alg: String = "ES256",
            use: String = "sig"
        ) {
            self.kty = kty
            self.crv = crv
            self.x = x
            self.y = y
            self.kid = kid
            self.alg = alg
            self.use = use
        }
    }
    public var keys: [Key]
    public init(keys: [Key]) { self.keys = keys }
}

public struct SealedTOTP: Codable, Equatable, Sendable {
    public var envelope: Base64URL
    public var algorithm: String
    public var digits: Int
    public var period: Int
    public init(envelope: Base64URL, algorithm: String = "SHA1", digits: Int = 6, period: Int = 30) {
        self.envelope = envelope
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
    }
}

/// A signed push challenge, as the push channel (`{"type":"mfaChallenge","jwt":…}`) and
/// `GET /v1/authenticator/challenges` carry it.
public struct PushChallenge: Codable, Equatable, Sendable {
    public var jwt: String
    public init(jwt: String) { self.jwt = jwt }
}

public struct PushChallengeList: Codable, Equatable, Sendable {
    public var challenges: [PushChallenge]
    public init(challenges: [PushChallenge]) { self.challenges = challenges }
}

/// `POST /v1/authenticator/answers`: the answer JWT signed by the authenticator's signing key.
public struct PushAnswer: Codable, Sendable {
    public var jwt: String
    public init(jwt: String) { self.jwt = jwt }
}

public struct PushAnswerResult: Codable, Equatable, Sendable {
    /// The transaction's status after the answer.
    public var status: String
    public init(status: String) { self.status = status }
}

/// `PUT /v1/authenticator/push`: PingOne's `allowPushNotifications(_:)`.
public struct PushPermission: Codable, Equatable, Sendable {
    public var allowed: Bool
    public init(allowed: Bool) { self.allowed = allowed }
}

/// `POST /v1/authenticator/logs`: the device's own (already redacted) log lines.
public struct LogUpload: Codable, Sendable {
    public var text: String
    public init(text: String) { self.text = text }
}

public struct LogReceipt: Codable, Equatable, Sendable {
    public var supportId: String
    public init(supportId: String) { self.supportId = supportId }
}

// MARK: Authentication codes (QR sign-in)

/// `POST /v1/auth-codes` (no session: the screen that wants to sign in).
public struct AuthCodeRequest: Codable, Sendable {
    /// REQUIRED (default) or NOT_REQUIRED.
    public var userApproval: String?
    public init(userApproval: String? = nil) { self.userApproval = userApproval }
}

public struct AuthCodeCreated: Codable, Equatable, Sendable {
    public var code: String
    public var uri: String
    public var expiresAt: Date
    /// Bearer credential of `GET /v1/auth-codes/current` and `POST /v1/auth-codes/current/session`.
    public var binding: String
    public init(code: String, uri: String, expiresAt: Date, binding: String) {
        self.code = code
        self.uri = uri
        self.expiresAt = expiresAt
        self.binding = binding
    }
}

public struct AuthCodeState: Codable, Equatable, Sendable {
    /// PENDING (not claimed yet), CLAIMED, EXPIRED, DENIED, COMPLETED.
    public var status: String
    public var expiresAt: Date
    public init(status: String, expiresAt: Date) {
        self.status = status
        self.expiresAt = expiresAt
    }
}

/// `POST /v1/authenticator/auth-codes {code}` and its approve / deny.
public struct AuthCodeClaim: Codable, Sendable {
    /// Bare or inside a URI (`…?authentication_code=…`).
    public var code: String
    public var userId: String?
    public init(code: String, userId: String? = nil) {
        self.code = code
        self.userId = userId
    }
}

/// PingOne's `AuthenticationObject`.
public struct AuthenticationObject: Codable, Equatable, Sendable {
    public struct User: Codable, Equatable, Sendable {
        public var userId: String
        public var username: String
        public var given: String
        public var family: String
        public init(userId: String, username: String, given: String, family: String) {
            self.userId = userId
            self.username = username
            self.given = given
            self.family = family
        }
    }
    public var status: String
    public var users: [User]
    public var userApproval: String
    /// The requesting screen's address, user agent and time.
    public var clientContext: ClientContext
    public init(status: String, users: [User], userApproval: String, clientContext: ClientContext) {
        self.status = status
        self.users = users
        self.userApproval = userApproval
        self.clientContext = clientContext
    }
}

/// PingOne's `clientContext`: who is asking to sign in.
public struct ClientContext: Codable, Equatable, Sendable {
    public var address: String
    public var userAgent: String
    public var time: Date
    public init(address: String, userAgent: String, time: Date) {
        self.address = address
        self.userAgent = userAgent
        self.time = time
    }
}
