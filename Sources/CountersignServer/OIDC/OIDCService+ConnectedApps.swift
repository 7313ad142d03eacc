import CountersignAPI
import Foundation

/// "Connected apps" (docs/PROTOCOL.md §6.10): the applications an account allowed on the consent screen,
/// listed in Settings, each of which the person may disconnect: its consent is forgotten (the screen asks
/// again next time) and everything it was granted ends at once.
extension OIDCService {
    /// The account's consents, by client name, with what each may receive and since when.
    public func connectedApps(accountID: String) async throws -> [ConnectedApp] {
        var apps: [ConnectedApp] = []
        for consent in try await store.oidcConsents(accountID: accountID) {
            // A client removed since has no consent left (its removal forgets them); one renamed shows its name.
            guard let client = try await store.oidcClient(id: consent.clientID) else { continue }
            apps.append(
                ConnectedApp(clientId: client.id, name: client.name, scope: consent.scope, connectedAt: consent.at)
            )
        }
        return apps.sorted { ($0.name.lowercased(), $0.clientId) < ($1.name.lowercased(), $1.clientId) }
    }

    /// Forgets the account's consent to `clientID` and revokes what the client was granted. False when the
    /// account had no consent to it.
    /// The grants it ended (their clients are told by back-channel logout), or nil when the account had not
    /// allowed the client.
    public func disconnect(
        _ auth: Authenticated,
        clientID: String,
        origin: RequestOrigin
    ) async throws -> [OIDCGrant]? {
        guard
            let grants = try await store.removeOIDCConsent(
                accountID: auth.account.id,
                clientID: clientID,
                now: clock.now()
            )
        else { return nil }
        try await audit.record(auth.account.id, .oidcConsent, .oidc("disconnected"), origin)
        return grants
    }
}
