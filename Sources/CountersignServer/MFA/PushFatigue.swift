import Foundation

/// Limits on push approvals per account (docs/PROTOCOL.md §3): a flood of pushes trains people to approve.
struct PushFatigue: Codable, Equatable, Sendable {
    static let maxPushesSinceSuccess = 5
    static let escalation: TimeInterval = 86_400

    var pushesSinceSuccess = 0
    /// After a "this wasn't me": no push until the account signs in another way.
    var suspended = false
    /// After a denial or a wrong number: 6-digit numbers until then.
    var escalatedUntil: Date?

    /// Whether a new sign-in may push, and with how many digits (`policyDigits` is the account's own
    /// setting, 2 or 6).
    func allowsPush(now: Date, policyDigits: Int) -> (allowed: Bool, digits: Int) {
        let digits = (escalatedUntil.map { now < $0 } ?? false) ? 6 : policyDigits
        return (!suspended && pushesSinceSuccess < Self.maxPushesSinceSuccess, digits)
    }

    mutating func pushed() { pushesSinceSuccess += 1 }

    mutating func finished(_ outcome: MFATransaction.Outcome, viaPush: Bool, now: Date) {
        switch outcome {
        case .completed:
            pushesSinceSuccess = 0
            // Signing in another way is what lifts a suspension; a push cannot lift its own.
            if !viaPush { suspended = false }
        case .failed(.reported):
            suspended = true
            escalatedUntil = now.addingTimeInterval(Self.escalation)
        case .failed(.denied), .failed(.wrongNumber):
            escalatedUntil = now.addingTimeInterval(Self.escalation)
        case .failed(.tooManyCodes), .stillOpen, .refused:
            break
        }
    }
}
