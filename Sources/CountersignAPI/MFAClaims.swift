#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The claims of a push challenge, signed ES256 by the server (docs/PROTOCOL.md §3). Times are Unix seconds.
public struct ChallengeClaims: Codable, Equatable, Sendable {
    public struct Matching: Codable, Equatable, Sendable {
        /// ENTER_MANUALLY or SELECT_NUMBER.
        public var type: String
        /// SELECT_NUMBER only: three numbers, one of them the one the sign-in side shows.
        public var options: [String]?
        public init(type: String, options: [String]?) {
            self.type = type
            self.options = options
        }
    }
    public var iss: String
    public var aud: String
    public var sub: String
    public var txn: String
    public var nonce: String
    public var iat: Int64
    public var exp: Int64
    public var ctx: ClientContextClaim
    public var nm: Matching
    /// Absent for a sign-in; `reauthentication` when an already signed-in session asks to confirm a
    /// sensitive change (the authenticator says so: it is not a new sign-in).
    public var purpose: String?
    public static let reauthentication = "reauthentication"
    public init(
        iss: String,
        aud: String,
        sub: String,
        txn: String,
        nonce: String,
        iat: Int64,
        exp: Int64,
        ctx: ClientContextClaim,
        nm: Matching,
        purpose: String? = nil
    ) {
        self.iss = iss
        self.aud = aud
        self.sub = sub
        self.txn = txn
        self.nonce = nonce
        self.iat = iat
        self.exp = exp
        self.ctx = ctx
        self.nm = nm
        self.purpose = purpose
    }
}

/// PingOne's `clientContext` inside a token: who asked to sign in (time in Unix seconds).
public struct ClientContextClaim: Codable, Equatable, Sendable {
    public var address: String
    public var userAgent: String
    public var time: Int64
    public init(address: String, userAgent: String, time: Int64) {
        self.address = address
        self.userAgent = userAgent
        self.time = time
    }
}

/// The claims of an authenticator's answer, signed ES256 by its device signing key (docs/PROTOCOL.md §3).
public struct AnswerClaims: Codable, Equatable, Sendable {
    public var iss: String
    public var aud: String
    public var txn: String
    public var nonce: String
    public var iat: Int64
    /// APPROVE or DENY.
    public var decision: String
    public var number: String?
    public var report: Bool?
    public init(
        iss: String,
        aud: String,
        txn: String,
        nonce: String,
        iat: Int64,
        decision: String,
        number: String?,
        report: Bool?
    ) {
        self.iss = iss
        self.aud = aud
        self.txn = txn
        self.nonce = nonce
        self.iat = iat
        self.decision = decision
        self.number = number
        self.report = report
    }
}
