import Foundation
import Synchronization
import Testing

@testable import CountersignServer

/// What goes into the URIs an authenticator scans: the configured public URL, else the request's Host,
/// and never a Host header that is not a plain host and port.
@Suite(.closesStorage) struct PublicURLTests {
    @Test func validation() {
        #expect(ServerConfiguration.validPublicURL("https://auth.example.com") == "https://auth.example.com")
        #expect(ServerConfiguration.validPublicURL("https://auth.example.com/") == "https://auth.example.com")
        #expect(ServerConfiguration.validPublicURL("HTTP://[::1]:8443") == "http://[::1]:8443")
        for bad in [
            "auth.example.com", "ftp://auth.example.com", "https://", "https://auth.example.com/app",
            "https://a.example?x=1",
            "https://user:pw@auth.example.com", "https://auth.example.com#frag", "javascript:alert(1)", "",
        ] {
            #expect(ServerConfiguration.validPublicURL(bad) == nil, "\(bad)")
        }
    }

    static func pairingURI(_ h: Harness) async throws -> URLComponents {
        let uri = Mutex<String?>(nil)
        try await h.run { api in
            try await api.register("pat")
            let token = try await api.token("pat")
            let text = try await api.call(.post, "/v1/me/mfa/pairing-keys", token: token).json["uri"] as? String
            uri.withLock { $0 = text }
        }
        let text = try #require(uri.withLock { $0 })
        return try #require(URLComponents(string: text))
    }

    static func server(_ c: URLComponents) -> String? { c.queryItems?.first { $0.name == "server" }?.value }

    @Test func theConfiguredURLWins() async throws {
        let h = try await Harness.make(.sqlite) { $0.publicURL = "https://auth.example.com" }
        #expect(Self.server(try await Self.pairingURI(h)) == "https://auth.example.com")
        #expect(
            MFARoutes.server(authority: "evil.example:1", publicURL: "https://auth.example.com")
                == "https://auth.example.com"
        )
    }

    @Test func withoutOneTheHostIsUsedIfPlain() async throws {
        // The test client's requests name localhost.
        #expect(Self.server(try await Self.pairingURI(try await Harness.make(.sqlite))) == "http://localhost")
        #expect(MFARoutes.server(authority: "cs.local:8080", publicURL: nil) == "http://cs.local:8080")
        #expect(MFARoutes.server(authority: "[::1]:8080", publicURL: nil) == "http://[::1]:8080")
        for hostile in [
            "x/y?z@evil", "evil.example&server=x", "a b", "é.example", "", String(repeating: "a", count: 300),
        ] {
            #expect(MFARoutes.server(authority: hostile, publicURL: nil) == "http://localhost", "\(hostile)")
        }
        #expect(MFARoutes.server(authority: nil, publicURL: nil) == "http://localhost")
    }
}
