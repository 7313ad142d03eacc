import Foundation

/// A QR / typed sign-in code (docs/PROTOCOL.md §3, PingOne `authenticate(authCode)`): the sign-in screen
/// waits; one authenticator claims it and approves a user, or denies.
struct AuthenticationCode: Codable, Equatable, Sendable {
    /// Exactly PingOne's words. A code nobody has claimed yet has no status on the wire; `pending` is ours.
    enum Status: String, Codable, Sendable {
        case pending = "PENDING"
        case claimed = "CLAIMED"
        case expired = "EXPIRED"
        case denied = "DENIED"
        case completed = "COMPLETED"
    }
    enum Approval: String, Codable, Sendable {
        case required = "REQUIRED"
        case notRequired = "NOT_REQUIRED"
    }

    enum Refusal: Error, Equatable, Sendable {
        /// Claimed by another authenticator, or already finished.
        case notClaimable
        /// This authenticator did not claim it, or the user is not among the ones it offered.
        case notYours
    }

    static let length = 8
    static let defaultLifetime: TimeInterval = 60

    let codeHash: String
    let approval: Approval
    let createdAt: Date
    let expiresAt: Date
    private(set) var status = Status.pending
    private(set) var claimedBy: String?
    /// The account ids the claiming authenticator is paired with (its users).
    private(set) var users: [String] = []
    /// The account that signs in: set on COMPLETED.
    private(set) var approvedUser: String?

    init(codeHash: String, approval: Approval, now: Date, lifetime: TimeInterval = Self.defaultLifetime) {
        self.codeHash = codeHash
        self.approval = approval
        createdAt = now
        expiresAt = now.addingTimeInterval(lifetime)
    }

    func status(at now: Date) -> Status {
        (status == .pending || status == .claimed) && now >= expiresAt ? .expired : status
    }

    private mutating func expireIfDue(_ now: Date) -> Bool {
        guard status(at: now) == .expired else { return false }
        status = .expired
        return true
    }

    /// An authenticator submitted the code. With NOT_REQUIRED and one user, that completes it.
    mutating func claim(device: String, users: [String], now: Date) throws(Refusal) -> Status {
        if expireIfDue(now) { return .expired }
        // The claiming authenticator may look again (claim in one run, answer in another); no one else may.
        if status == .claimed, claimedBy == device { return .claimed }
        guard status == .pending, !users.isEmpty else { throw .notClaimable }
        claimedBy = device
        self.users = users
        status = .claimed
        if approval == .notRequired, users.count == 1 {
            approvedUser = users[0]
            status = .completed
        }
        return status
    }

    /// PingOne's `approve(userId:)`: COMPLETED, or EXPIRED when too late.
    mutating func approve(device: String, user: String, now: Date) throws(Refusal) -> Status {
        if expireIfDue(now) { return .expired }
        guard status == .claimed, claimedBy == device, users.contains(user) else {
            throw status == .claimed ? .notYours : .notClaimable
        }
        approvedUser = user
        status = .completed
        return status
    }

    /// PingOne's `deny()`: DENIED, or EXPIRED when too late.
    mutating func deny(device: String, now: Date) throws(Refusal) -> Status {
        if expireIfDue(now) { return .expired }
        guard status == .claimed, claimedBy == device else { throw status == .claimed ? .notYours : .notClaimable }
        status = .denied
        return status
    }
}
