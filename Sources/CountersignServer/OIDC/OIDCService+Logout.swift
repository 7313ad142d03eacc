import CountersignAPI
import Foundation

/// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0, docs/PROTOCOL.md §6.9): the page at
/// `/oauth2/logout` passes the request it was opened with; the provider checks it, the page asks the person
/// whether to sign out of Countersign too, and, if so, this browser's provider session ends (its grants revoked,
/// their clients told by back-channel logout) before the page goes to the registered post-logout URI.
extension OIDCService {
    public enum Logout: Equatable, Sendable {
        /// The request is refused: shown on the provider's page, nothing redirected.
        case shown(OIDCError)
        /// Ask first. `client` named by the hint or `client_id`; `location` the post-logout URI with `state`;
        /// `otherAccount` when the hint names another account than the one signed in here.
        case confirm(client: OIDCClient?, location: String?, otherAccount: Bool)
        /// This browser's provider session ended (the page signs it out next); go to `location`, if any.
        case signedOut(client: OIDCClient?, location: String?, grants: [OIDCGrant])
    }

    /// Checks the logout request `parameters` and, when `signOut` and the browser is signed in (`auth`), ends
    /// the provider session: revokes the grants made in it (returned for back-channel logout).
    public func logout(
        _ parameters: [(String, String)],
        auth: Authenticated?,
        signOut: Bool,
        origin: RequestOrigin
    ) async throws -> Logout {
        guard let issuer else { return .shown(OIDCError(.serverError, Self.offWords)) }
        let p: [String: String]
        switch Self.requestParameters(parameters) {
        case .success(let parsed): p = parsed
        case .failure(let error): return .shown(error)
        }
        guard (p["state"]?.utf8.count ?? 0) <= Self.maxEchoedLength else {
            return .shown(OIDCError(.invalidRequest, "state is longer than \(Self.maxEchoedLength) bytes"))
        }
        // The hint: an ID token this provider signed (any key it still publishes; expired ones too, as the spec
        // allows), for this issuer. Its audience names the client.
        var hint: IDToken?
        if let text = p["id_token_hint"] {
            guard let token = try? await keys.verify(text, as: IDToken.self), token.iss == issuer else {
                return .shown(
                    OIDCError(
                        .invalidRequest,
                        "id_token_hint is not an ID token this provider issued; nothing was done. Go back to the application"
                    )
                )
            }
            hint = token
        }
        if let given = p["client_id"], let hint, hint.aud != given {
            return .shown(OIDCError(.invalidRequest, "id_token_hint was issued to another client than client_id"))
        }
        var client: OIDCClient?
        if let id = p["client_id"] ?? hint?.aud {
            guard let found = try await store.oidcClient(id: id) else {
                return .shown(OIDCError(.invalidClient, "there is no client \(id.debugDescription) on this server"))
            }
            client = found
        }
        var location: String?
        if let requested = p["post_logout_redirect_uri"] {
            guard let client else {
                return .shown(
                    OIDCError(
                        .invalidRequest,
                        "post_logout_redirect_uri needs id_token_hint or client_id to name the client"
                    )
                )
            }
            guard client.postLogoutRedirectURI(requested) != nil else {
                return .shown(
                    OIDCError(
                        .invalidRequest,
                        "post_logout_redirect_uri \(requested.debugDescription) is not one registered for \(client.name); nothing was sent to it"
                    )
                )
            }
            location = p["state"] == nil ? requested : Self.redirect(requested, ["state": p["state"]])
        }
        let otherAccount =
            if let auth, let hint, let client { hint.sub != subject(client, auth.account.id) } else { false }
        // The client's name is said to a signed-in browser, or with a hint this provider signed; to anyone else
        // only where the registered URI goes.
        let named = auth != nil || hint != nil ? client : nil
        guard signOut, let auth else {
            return signOut
                ? .signedOut(client: named, location: location, grants: [])
                : .confirm(client: named, location: location, otherAccount: otherAccount)
        }
        let grants = try await store.revokeOIDCGrants(
            accountID: auth.account.id,
            sessionID: "s_" + String(auth.session.tokenHash.prefix(24)),  // as SessionService.SignedOutBrowser
            bindingID: auth.session.bindingID,
            now: clock.now()
        )
        try await audit.record(auth.account.id, .oidcLogout, .success, origin)
        return .signedOut(client: client, location: location, grants: grants)
    }
}
