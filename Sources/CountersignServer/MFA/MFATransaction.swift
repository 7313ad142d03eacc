import CountersignCrypto
import Foundation

/// One sign-in waiting for its second factor (docs/PROTOCOL.md §3). A value type: the store keeps it and
/// applies each transition under a compare-and-set, so of concurrent answers exactly one takes effect.
struct MFATransaction: Codable, Equatable, Sendable {
    /// PingOne's device-authentication statuses.
    enum Status: String, Codable, Sendable {
        case pushConfirmationRequired = "PUSH_CONFIRMATION_REQUIRED"
        case otpRequired = "OTP_REQUIRED"
        case completed = "COMPLETED"
        case failed = "FAILED"
        case pushConfirmationTimedOut = "PUSH_CONFIRMATION_TIMED_OUT"

        var isTerminal: Bool { self == .completed || self == .failed || self == .pushConfirmationTimedOut }
    }

    /// Why a transaction failed: each is audited and counts toward the account's lockout.
    enum Failure: String, Codable, Sendable {
        case denied, reported
        case wrongNumber = "wrong-number"
        case tooManyCodes = "too-many-codes"
    }

    /// What a transition did. `refused` changes nothing and says why.
    enum Outcome: Equatable, Sendable {
        case completed
        case failed(Failure)
        case stillOpen(attemptsLeft: Int)
        case refused(Refusal)
    }

    enum Refusal: String, Equatable, Sendable {
        /// Already COMPLETED, FAILED or timed out: a second answer, a late code.
        case finished
        case expired
        /// The answer names another challenge's nonce or comes from a device not asked.
        case notThisChallenge
        /// Push is not offered on this transaction (none paired, switched off, suspended).
        case pushNotOffered
    }

    let id: String
    let accountID: String
    let createdAt: Date
    let expiresAt: Date
    /// The authenticators a challenge went to, and each one's nonce.
    let challenges: [String: [UInt8]]
    let matching: NumberMatching?
    private(set) var status: Status
    private(set) var failure: Failure?
    private(set) var codeAttempts = 0
    /// The session has been handed to the binding client.
    private(set) var collected = false

    static let maxCodeAttempts = 5

    init(
        id: String,
        accountID: String,
        now: Date,
        lifetime: TimeInterval,
        challenges: [String: [UInt8]],
        matching: NumberMatching?
    ) {
        self.id = id
        self.accountID = accountID
        createdAt = now
        expiresAt = now.addingTimeInterval(lifetime)
        self.challenges = challenges
        self.matching = matching
        status = challenges.isEmpty ? .otpRequired : .pushConfirmationRequired
    }

    /// The status as of `now`: an open transaction past its expiry has timed out.
    func status(at now: Date) -> Status { !status.isTerminal && now >= expiresAt ? .pushConfirmationTimedOut : status }

    private mutating func open(_ now: Date) -> Refusal? {
        if status.isTerminal { return .finished }
        if now >= expiresAt {
            status = .pushConfirmationTimedOut
            return .expired
        }
        return nil
    }

    /// An authenticator's verified answer (its signature is checked before this is called).
    mutating func answer(
        device: String,
        nonce: [UInt8],
        approve: Bool,
        number: String?,
        report: Bool,
        now: Date
    ) -> Outcome {
        if let r = open(now) { return .refused(r) }
        guard let matching, status == .pushConfirmationRequired else { return .refused(.pushNotOffered) }
        guard let expected = challenges[device], ConstantTime.equal(expected, nonce) else {
            return .refused(.notThisChallenge)
        }
        if !approve {
            return fail(report ? .reported : .denied)
        }
        guard matching.matches(number) else { return fail(.wrongNumber) }
        status = .completed
        return .completed
    }

    /// A passcode or recovery code was checked by the caller (`valid`); wrong ones are limited, here and
    /// by the account's lockout rule (`exhausted`: the wrong code delayed or locked the account).
    mutating func code(valid: Bool, exhausted: Bool = false, now: Date) -> Outcome {
        if let r = open(now) { return .refused(r) }
        if valid {
            status = .completed
            return .completed
        }
        codeAttempts += 1
        guard codeAttempts < Self.maxCodeAttempts, !exhausted else { return fail(.tooManyCodes) }
        return .stillOpen(attemptsLeft: Self.maxCodeAttempts - codeAttempts)
    }

    /// The binding client asks for its session: once, and only after COMPLETED.
    mutating func collect(now: Date) -> Bool {
        guard status == .completed, !collected else { return false }
        collected = true
        return true
    }

    private mutating func fail(_ why: Failure) -> Outcome {
        status = .failed
        failure = why
        return .failed(why)
    }
}
