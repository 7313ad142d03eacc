import Foundation

/// A password that matched, and for what: not a success yet. Whoever asked (the sign-in and
/// re-authentication routes) asks the MFA feature whether a second factor follows, then either
/// `complete`s it or records it as `pending`. Package-only, like the steps that take it: completing
/// without asking MFA would skip the second factor, so no code outside this package can.
package struct VerifiedPassword: Sendable {
    package enum Purpose: Sendable, Equatable {
        case signIn
        /// The session (its token hash) that asked to be re-authenticated.
        case reauthentication(tokenHash: String)
    }
    package let purpose: Purpose
    /// With the stored hash as it is after any rehash: the tag a password change voids (`passwordTag`).
    package let account: AccountRecord
    package let origin: RequestOrigin
    package let at: Date

    var kind: AuditKind { purpose == .signIn ? .signIn : .reauth }
}
