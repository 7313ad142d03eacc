import Testing

@testable import CountersignServer

/// Redirect URIs as registration takes them and as a request's URI is compared with them (docs/PROTOCOL.md
/// §5.4), with the tricks peers' advisories were made of.
struct RedirectURITests {
    @Test func registrationRefusesWhatPeersWereBrokenBy() throws {
        let refused = [
            // CVE-2026-9086
            "javascript:alert(1)", "data:text/html,hi", "JavaScript://x", "HTTPS://app.example.com/cb",
            "Https://app.example.com/cb", "https://App.Example.com/cb",
            "http://app.example.com/cb",  // http only to loopback
            "https://user@app.example.com/cb", "https://app.example.com@evil.com/cb",  // CVE-2026-7504
            "https://app.example.com/cb#frag", "https://*.example.com/cb", "https://app.example.com/*",
            "https://app.example.com/a/../cb", "https://app.example.com/a/..;/cb", "https://app.example.com/%2e%2e/cb",
            "https://app.example.com/%2E%2E/cb", "https://app.example.com/./cb",  // CVE-2026-3872
            "https://app.example.com\\@evil.com/cb", "https://app.example.com/c b", "https://app.example.com/\u{0}",
            "/relative/cb", "", "https://", "https://app.example.com:0/cb", "https://app.example.com:70000/cb",
            "https://app.example.com/" + String(repeating: "a", count: 2_000),
        ]
        for uri in refused {
            #expect(throws: OIDCClientError.self, "\(uri) should be refused") { try RedirectURI(registering: uri) }
        }
        let taken = [
            "https://app.example.com/cb", "https://app.example.com:8443/oauth2/callback?tenant=a",
            "http://127.0.0.1/cb", "http://[::1]:8080/cb", "http://localhost:3000/cb",
            "https://xn--bcher-kva.example/cb",
        ]
        for uri in taken { #expect(throws: Never.self, "\(uri) should be taken") { try RedirectURI(registering: uri) } }
        #expect(try RedirectURI(registering: "http://127.0.0.1/cb").isLoopback)
        #expect(try !(RedirectURI(registering: "https://app.example.com/cb").isLoopback))
    }

    @Test func aRequestMatchesByExactStringOnly() throws {
        let uri = try RedirectURI(registering: "https://app.example.com/cb")
        #expect(uri.matches("https://app.example.com/cb", anyLoopbackPort: true))
        for other in [
            "https://app.example.com.evil.com/cb", "https://app.example.com/cb/longer",
            "https://app.example.com/cb?x=1",
            "https://app.example.com/CB", "https://app.example.com:443/cb", "https://app.example.com/cb#",
            "https://app.example.com/cb/", "https://app.example.com/./cb", "https://app.example.com/%63b",
            "http://app.example.com/cb", "https://evil.com/cb",
        ] {
            #expect(!uri.matches(other, anyLoopbackPort: true), "\(other)")
        }
    }

    /// RFC 8252 §7.3: a native app's loopback URI on any port; Keycloak CVE-2024-8883: only for such a client,
    /// and never another host.
    @Test func aLoopbackURIMatchesAnyPortOnlyForAPublicClient() throws {
        let uri = try RedirectURI(registering: "http://127.0.0.1/cb")
        #expect(uri.matches("http://127.0.0.1:49152/cb", anyLoopbackPort: true))
        #expect(!uri.matches("http://127.0.0.1:49152/cb", anyLoopbackPort: false))
        for other in [
            "http://127.0.0.1:49152/cb/x", "http://127.0.0.2:49152/cb", "http://localhost:49152/cb",
            "http://evil.com:49152/cb", "http://127.0.0.1.evil.com:49152/cb", "http://127.0.0.1:49152/cb?x",
            "https://127.0.0.1:49152/cb", "http://user@127.0.0.1:49152/cb", "http://127.0.0.1:49152/../cb",
            "http://127.0.0.1:0/cb",
        ] {
            #expect(!uri.matches(other, anyLoopbackPort: true), "\(other)")
        }
        let https = try RedirectURI(registering: "https://app.example.com/cb")
        #expect(!https.matches("https://app.example.com:8443/cb", anyLoopbackPort: true))
    }
}
