import CountersignAPI
import Foundation
import Hummingbird

/// How the devices feature's refusals read as problems.
extension Problem {
    init(_ error: DeviceError) {
        switch error {
        case .challengeInvalid:
            self.init(
                status: .badRequest,
                code: .challengeInvalid,
                title: "Challenge invalid",
                detail: "The challenge is unknown, used, expired or for another account or device; ask for a new one."
            )
        case .badSignature(let why): self = .badSignature(why)
        case .deviceLimit(let n): self = .deviceLimit(n)
        case .keyInUse(let why): self = .keyInUse(why)
        case .notFound:
            self = .notFound
        case .revoked:
            self.init(
                status: .forbidden,
                code: .deviceRevoked,
                title: "Device revoked",
                detail: "This device was revoked; register new keys as a new device."
            )
        case .alreadyVouched:
            self.init(
                status: .conflict,
                code: .alreadyVouched,
                title: "Already approved",
                detail: "Another of your devices approved this device already; there is nothing to do."
            )
        case .notAnApprover:
            self.init(
                status: .forbidden,
                code: .notAMessagingDevice,
                title: "Not allowed to approve devices",
                detail:
                    "This authenticator may not approve new devices yet: a device of the account added before it must endorse it first (countersign device endorse, or Settings, Devices in the web client)."
            )
        }
    }
}
