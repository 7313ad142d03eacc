import CountersignAPI
import Foundation

/// One WebAuthn ceremony the server started (docs/PROTOCOL.md §5.1): its challenge, what it is for and for
/// whom, for 5 minutes, answered at most once.
struct PasskeyCeremony: Codable, Equatable, Sendable {
    enum Kind: String, Codable, Sendable {
        case registration
        case signIn
        case secondFactor
        case reauthentication
    }

    static let lifetime: TimeInterval = 300
    static let challengeLength = 32

    let id: String
    let kind: Kind
    let challenge: [UInt8]
    /// The account it is for; nil for a discoverable sign-in (the passkey names the account).
    let accountID: String?
    /// The session (its token hash) or second-factor transaction it is bound to, if any.
    let boundTo: String?
    let expiresAt: Date
    /// A registration's: the PRF salt the new passkey will keep (docs/SPEC.md §14).
    var prfSalt: [UInt8]? = nil

    static func make(
        kind: Kind,
        accountID: String?,
        boundTo: String?,
        now: Date,
        random: any RandomSource
    )
        -> PasskeyCeremony
    {
        PasskeyCeremony(
            id: Base64URL(random.bytes(16)).text,
            kind: kind,
            challenge: random.bytes(challengeLength),
            accountID: accountID,
            boundTo: boundTo,
            expiresAt: now.addingTimeInterval(lifetime)
        )
    }

    /// Whether a response may be checked against this ceremony at all.
    func admits(kind: Kind, accountID: String?, boundTo: String?, now: Date) -> Bool {
        self.kind == kind && now < expiresAt && (self.accountID == nil || self.accountID == accountID)
            && self.boundTo == boundTo
    }
}
