import CountersignAPI
import Foundation
import Testing

@testable import CountersignServer

/// `OIDCAdmin.apply` on both backends: the configuration file's clients added, changed (what they held
/// revoked when their terms change, as `admin oidc-client update` does), left alone when unchanged, removed
/// when gone from the file; an administrator's client is neither taken nor touched.
@Suite(.closesStorage) struct OIDCConfigApplyTests {
    typealias Flow = OIDCFlowTests

    static func configured(_ id: String, policy: String = "password") -> OIDCAdmin.Configured {
        var d = OIDCAdmin.Draft()
        d.name = "The \(id) app"
        d.redirectURIs = [Flow.redirect]
        d.policy = policy
        return OIDCAdmin.Configured(id: id, draft: d, secretSHA256: TokenHash.hex("s3cret"))
    }

    @Test(arguments: Backend.available)
    func theFilesClientsAreAddedChangedAndRemoved(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.publicURL = Flow.issuer }
        try await h.run { api in
            try await api.register("cfgann")
            let token = try await api.token("cfgann")
            #expect(try await h.storage.addOIDCClient(Flow.client("own")))
            let added = try await OIDCAdmin.apply([Self.configured("conf")], storage: h.storage, now: h.clock.now())
            #expect(added == OIDCAdmin.Applied(added: ["conf"]))
            #expect(try await h.storage.oidcClient(id: "conf")?.managed == true)
            // It signs in like any client (its secret's SHA-256 came from the file).
            let tokens = try await Flow.tokens(api, token, "conf")
            #expect(try await api.call(.get, "/oauth2/userinfo", token: tokens.access_token).status == 200)
            // Unchanged: nothing done, nothing revoked.
            let again = try await OIDCAdmin.apply([Self.configured("conf")], storage: h.storage, now: h.clock.now())
            #expect(again == OIDCAdmin.Applied())
            #expect(try await api.call(.get, "/oauth2/userinfo", token: tokens.access_token).status == 200)
            // Its terms changed: updated, and what it held ends.
            let tighter = try await OIDCAdmin.apply(
                [Self.configured("conf", policy: "mfa")],
                storage: h.storage,
                now: h.clock.now()
            )
            #expect(tighter == OIDCAdmin.Applied(updated: ["conf"]))
            #expect(try await api.call(.get, "/oauth2/userinfo", token: tokens.access_token).status == 401)
            // The file may not take an administrator's client; nothing changes.
            await #expect(throws: OIDCClientError.registeredByAdmin("own")) {
                _ = try await OIDCAdmin.apply(
                    [Self.configured("conf"), Self.configured("own")],
                    storage: h.storage,
                    now: h.clock.now()
                )
            }
            #expect(try await h.storage.oidcClient(id: "conf")?.policy == .mfa)
            // Gone from the file: removed; the administrator's stays.
            let none = try await OIDCAdmin.apply([], storage: h.storage, now: h.clock.now())
            #expect(none == OIDCAdmin.Applied(removed: ["conf"]))
            #expect(try await h.storage.oidcClient(id: "conf") == nil)
            #expect(try await h.storage.oidcClient(id: "own") != nil)
        }
    }
}
