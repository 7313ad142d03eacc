import Foundation

/// Why a device operation was refused. Closed; `Problem.init(_:)` maps each case to one problem type.
public enum DeviceError: Error, Equatable, Sendable {
    /// The challenge or nonce is unknown, used, expired, or issued for another account or device.
    case challengeInvalid
    /// A signature does not verify with the key it names (or is not low-S, or not 64 bytes).
    case badSignature(String)
    /// The account already has `limit` active devices.
    case deviceLimit(Int)
    /// A key is already registered to a device (keys are never reused, not even after revocation).
    case keyInUse(String)
    /// No such device for this account, or no such user: the same answer, so IDs cannot be probed.
    case notFound
    /// The device was revoked; it cannot open sessions.
    case revoked
    /// The device was vouched for already: a device is linked once.
    case alreadyVouched
    /// An authenticator that no device of the account endorsed as an approver (docs/PROTOCOL.md §1.2) tried
    /// to approve a device.
    case notAnApprover
}
