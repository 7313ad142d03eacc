import CountersignAPI
import Foundation

extension CountersignAuthenticator {
    /// This authenticator as the server has it paired: name, pairing date, push on or off.
    public func status() async throws -> AuthenticatorInfo {
        try await client.send("GET", "/v1/authenticator", as: AuthenticatorInfo.self, credential: .device)
    }

    /// Unpairs this authenticator on the server (its device is revoked). The server refuses
    /// (`last-second-factor`) while it is the account's only second factor. Deleting the stored state is
    /// the caller's (PingOne's `removeLocalData`).
    public func unpair() async throws {
        try await client.send("DELETE", "/v1/authenticator", credential: .device)
    }
}
