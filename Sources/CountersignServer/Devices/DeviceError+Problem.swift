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
        case .badSignature(let why):
            self.init(status: .unprocessableContent, code: .badSignature, title: "Bad signature", detail: why)
        case .deviceLimit(let n):
            self.init(
                status: .conflict,
                code: .deviceLimit,
                title: "Too many devices",
                detail: "The account already has \(n) active devices; revoke one (DELETE /v1/devices/{id}) first.",
                extra: ["limit": .int(n)]
            )
        case .keyInUse(let why):
            self.init(status: .conflict, code: .keyInUse, title: "Key in use", detail: why)
        case .notFound:
            self = .notFound
        case .revoked:
            self.init(
                status: .forbidden,
                code: .deviceRevoked,
                title: "Device revoked",
                detail: "This device was revoked; register new keys as a new device."
            )
        }
    }
}
