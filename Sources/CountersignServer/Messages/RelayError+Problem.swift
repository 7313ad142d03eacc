import CountersignAPI
import Foundation
import Hummingbird

/// How the relay's refusals read as problems.
extension Problem {
    init(_ error: RelayError) {
        switch error {
        case .senderRevoked:
            self.init(
                status: .forbidden,
                code: .deviceRevoked,
                title: "Device revoked",
                detail: "This device was revoked; register new keys as a new device."
            )
        case .invalidEnvelope(let why):
            self.init(
                status: .unprocessableContent,
                code: .invalidEnvelope,
                title: "Invalid envelope",
                detail: "The envelope is not a Countersign message envelope: \(why)."
            )
        case .forgedSender(let why):
            self.init(status: .unprocessableContent, code: .badSignature, title: "Bad signature", detail: why)
        case .unknownRecipients(let names):
            self.init(
                status: .unprocessableContent,
                code: .unknownRecipient,
                title: "Unknown recipient",
                detail: "No account is named \(names.joined(separator: ", ")).",
                extra: ["usernames": .strings(names)]
            )
        case .deviceMismatch(let missing, let extra):
            self.init(
                status: .conflict,
                code: .deviceMismatch,
                title: "Devices changed",
                detail:
                    "The envelope must be sealed to exactly the current devices of its recipients and of the sender: "
                    + "\(missing.count) missing, \(extra.count) extra. Fetch GET /v1/users/{username}/devices, check what changed, seal again.",
                extra: ["missingDevices": .keys(missing), "extraDevices": .keys(extra)]
            )
        case .messageIDReused:
            self.init(
                status: .conflict,
                code: .messageIDReused,
                title: "Message ID reused",
                detail: "Another envelope was already sent with this message ID; seal the message again (a fresh ID)."
            )
        case .notFound:
            self = .notFound
        case .alreadyDelivered:
            self.init(
                status: .conflict,
                code: .alreadyDelivered,
                title: "Already delivered",
                detail: "The message is already visible to its recipients and can no longer be cancelled."
            )
        case .sendRateLimited(let perMinute, let after):
            self.init(
                status: .tooManyRequests,
                code: .rateLimited,
                title: "Sending too fast",
                detail:
                    "This account may send \(perMinute) messages a minute; retry in \(Int(after.rounded(.up))) seconds."
            )
            headers[.retryAfter] = "\(max(1, Int(after.rounded(.up))))"
        case .quotaExceeded(let limit, let after):
            let mib = limit >> 20
            self.init(
                status: .tooManyRequests,
                code: .messageQuotaExceeded,
                title: "Message storage quota reached",
                detail:
                    "This account's stored messages would exceed its quota of \(mib) MiB; the oldest expires in about "
                    + "\(Int((after / 3600).rounded(.up))) hours. Cancel delayed messages or send less.",
                extra: ["quotaBytes": .int(Int(limit))]
            )
            headers[.retryAfter] = "\(max(1, Int(after.rounded(.up))))"
        }
    }
}
