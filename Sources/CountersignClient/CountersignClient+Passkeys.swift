import CountersignAPI
import Foundation

/// The account's passkeys (docs/PROTOCOL.md §5), with the account session. Making one needs a browser
/// (`navigator.credentials.create`), so the SDK lists, renames and removes them only.
extension CountersignClient {
    /// The account's passkeys, oldest first.
    public func passkeys() async throws -> [PasskeySummary] {
        try await send("GET", "/v1/me/passkeys", as: PasskeyList.self, credential: .account).passkeys
    }

    /// 1 to 64 characters without control characters (the server trims surrounding spaces).
    public func renamePasskey(id: String, to name: String) async throws -> PasskeySummary {
        try await send(
            "PATCH",
            "/v1/me/passkeys/\(try Self.segment(id))",
            body: PasskeyRename(name: name),
            as: PasskeySummary.self,
            credential: .account
        )
    }

    /// Removing a way to sign in changes the account's factors: without a full authentication in the last
    /// 10 minutes (fewer if the account's interval is shorter) the server refuses with
    /// `reauthentication-required`; `reauthenticate(password:)` (and its second factor), then call again.
    public func removePasskey(id: String) async throws {
        try await send("DELETE", "/v1/me/passkeys/\(try Self.segment(id))", credential: .account)
    }
}
