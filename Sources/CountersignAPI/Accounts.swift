#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

public struct RegisterRequest: Codable, Sendable {
    public var username: String
    public var password: String
    public var name: String
    public var lastname: String
    public var captcha: String?
    /// True: the answer is the new account's first session (`SignedInSession`), so that signing up costs
    /// one captcha, not two. Absent or false: the `Account`.
    public var signIn: Bool?
    public init(
        username: String,
        password: String,
        name: String,
        lastname: String,
        captcha: String? = nil,
        signIn: Bool? = nil
    ) {
        self.username = username
        self.password = password
        self.name = name
        self.lastname = lastname
        self.captcha = captcha
        self.signIn = signIn
    }
}

public struct SignInRequest: Codable, Sendable {
    public var username: String
    public var password: String
    public var captcha: String?
    /// `code`: the client will finish a second factor with a passcode or recovery code, so no push is
    /// sent (nor counted); `push` or absent: pushes go to the account's authenticators.
    public var secondFactor: String?
    public init(username: String, password: String, captcha: String? = nil, secondFactor: String? = nil) {
        self.username = username
        self.password = password
        self.captcha = captcha
        self.secondFactor = secondFactor
    }
}

public struct PasswordChangeRequest: Codable, Sendable {
    public var currentPassword: String
    public var newPassword: String
    public init(currentPassword: String, newPassword: String) {
        self.currentPassword = currentPassword
        self.newPassword = newPassword
    }
}

public struct ReauthRequest: Codable, Sendable {
    public var password: String
    /// Asked for under the same rule as sign-in's (`captcha-required`).
    public var captcha: String?
    /// As `SignInRequest.secondFactor`.
    public var secondFactor: String?
    public init(password: String, captcha: String? = nil, secondFactor: String? = nil) {
        self.password = password
        self.captcha = captcha
        self.secondFactor = secondFactor
    }
}

public struct AccountSettings: Codable, Equatable, Sendable {
    /// 0 (never), 5, 10, 30 or 60: one of ``reauthChoices``.
    public var reauthIntervalMinutes: Int
    public init(reauthIntervalMinutes: Int) { self.reauthIntervalMinutes = reauthIntervalMinutes }

    /// The intervals the server offers, in minutes (LockWhisper's choices; 0 is never).
    public static let reauthChoices = [0, 5, 10, 30, 60]
}

public struct Account: Codable, Equatable, Sendable {
    public var id: String
    public var username: String
    public var name: String
    public var lastname: String
    public var settings: AccountSettings
    public var createdAt: Date
    public init(
        id: String,
        username: String,
        name: String,
        lastname: String,
        settings: AccountSettings,
        createdAt: Date
    ) {
        self.id = id
        self.username = username
        self.name = name
        self.lastname = lastname
        self.settings = settings
        self.createdAt = createdAt
    }
}

public struct SignedInSession: Codable, Equatable, Sendable {
    public var token: String
    public var expiresAt: Date
    public var account: Account
    /// A resumed session's last full authentication (docs/PROTOCOL.md §1.1); absent after a sign-in, which
    /// is one.
    public var authenticatedAt: Date?
    /// A resumed session's binding: the nonce its next resumption may sign without asking for one
    /// (docs/PROTOCOL.md §1.1).
    public var nextNonce: DeviceChallenge?
    public init(
        token: String,
        expiresAt: Date,
        account: Account,
        authenticatedAt: Date? = nil,
        nextNonce: DeviceChallenge? = nil
    ) {
        self.token = token
        self.expiresAt = expiresAt
        self.account = account
        self.authenticatedAt = authenticatedAt
        self.nextNonce = nextNonce
    }
}

public struct AuditEvent: Codable, Equatable, Sendable {
    public var id: Int64
    public var at: Date
    public var kind: String
    public var outcome: String
    public var address: String
    public var userAgent: String
    public init(id: Int64, at: Date, kind: String, outcome: String, address: String, userAgent: String) {
        self.id = id
        self.at = at
        self.kind = kind
        self.outcome = outcome
        self.address = address
        self.userAgent = userAgent
    }
}

public struct AuditPage: Codable, Equatable, Sendable {
    public var events: [AuditEvent]
    /// The path of the next page, nil on the last.
    public var next: String?
    public init(events: [AuditEvent], next: String?) {
        self.events = events
        self.next = next
    }
}

public struct CaptchaChallenge: Codable, Equatable, Sendable {
    public var algorithm: String
    public var challenge: String
    public var maxnumber: Int
    public var salt: String
    public var signature: String
    public init(algorithm: String, challenge: String, maxnumber: Int, salt: String, signature: String) {
        self.algorithm = algorithm
        self.challenge = challenge
        self.maxnumber = maxnumber
        self.salt = salt
        self.signature = signature
    }
}
