import CountersignAPI
import Foundation

/// An authenticator's own view of its pairing, and unpairing itself (`countersign authenticator status`,
/// `unpair`), with its device session.
extension MFAService {
    /// `GET /v1/authenticator`: this authenticator as the account's `mfa status` lists it.
    public func authenticatorInfo(_ auth: DeviceAuthenticated) async throws -> AuthenticatorInfo {
        guard auth.device.kind == DeviceRecord.authenticator,
            let a = try await authenticatorStore.authenticator(deviceID: auth.device.id)
        else {
            throw MFAError.notAnAuthenticator
        }
        return AuthenticatorInfo(
            deviceId: a.deviceID,
            name: auth.device.name,
            pairedAt: a.pairedAt,
            pushAllowed: a.pushAllowed
        )
    }

    /// `DELETE /v1/authenticator`: the authenticator unpairs itself (its device is revoked, its sessions
    /// and push connection end). Refused while it is the account's only second factor: the account would
    /// fall back to the password alone without its owner deciding so from a signed-in session
    /// (`DELETE /v1/me/mfa` asks for a recent sign-in).
    public func unpair(_ auth: DeviceAuthenticated, origin: RequestOrigin) async throws {
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        let others = try await authenticatorStore.authenticators(accountID: auth.account.id).filter {
            $0.deviceID != auth.device.id
        }
        let (state, _) = try await state(auth.account.id)
        guard !others.isEmpty || state.totpConfirmed else { throw MFAError.lastSecondFactor }
        guard try await devices.revokeAuthenticator(deviceID: auth.device.id, accountID: auth.account.id) else {
            throw MFAError.notAnAuthenticator
        }
        try await audit.record(auth.account.id, .mfaUnpair, .success, origin)
    }
}
