import Foundation
import HTTPTypes
import Testing

@testable import CountersignServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(.closesStorage) struct TrustedProxiesTests {
    static let networks = ["10.0.0.0/8", "192.0.2.10", "fd00::/8"]
    static let proxies = try! TrustedProxies(parsing: networks)
    static let forwardedProxies = try! TrustedProxies(parsing: networks, header: .forwarded)

    static func client(_ peer: String, forwarded: [String] = [], xff: [String] = []) -> String {
        var headers = HTTPFields()
        for line in forwarded { headers.append(HTTPField(name: TrustedProxies.forwarded, value: line)) }
        for line in xff { headers.append(HTTPField(name: TrustedProxies.xForwardedFor, value: line)) }
        return (forwarded.isEmpty ? proxies : forwardedProxies).client(peer: peer, headers: headers)
    }

    @Test func networksContainWhatTheirPrefixSays() throws {
        let p = Self.proxies
        #expect(p.contains("10.255.1.2") && p.contains("192.0.2.10") && p.contains("fd12::1"))
        #expect(!p.contains("11.0.0.1") && !p.contains("192.0.2.11") && !p.contains("fe80::1"))
        // IPv4-mapped IPv6 is the IPv4 address, as the throttles spell it.
        #expect(p.contains("::ffff:10.1.2.3"))
        #expect(!p.contains("unknown") && !p.contains(""))
        let odd = try TrustedProxies(parsing: ["198.51.100.0/23", "2001:db8::/33", "0.0.0.0/0"])
        #expect(odd.contains("198.51.101.255") && odd.contains("2001:db8:7fff::1") && odd.contains("8.8.8.8"))
        #expect(!(try TrustedProxies(parsing: ["198.51.100.0/23"])).contains("198.51.102.0"))
        #expect(!(try TrustedProxies(parsing: ["2001:db8::/33"])).contains("2001:db8:8000::1"))
        for bad in ["10.0.0.0/33", "::/129", "host", "10.0.0.0/x", "1.2.3.4/٣", "", "/8"] {
            #expect(throws: TrustedProxies.ParseError.invalid(bad)) { try TrustedProxies(parsing: [bad]) }
        }
    }

    @Test func onlyATrustedPeerIsBelievedAndTheWalkStopsAtTheFirstStranger() {
        // A client talking directly: its headers are its own words, ignored.
        #expect(Self.client("203.0.113.9", xff: ["198.51.100.1"]) == "203.0.113.9")
        #expect(Self.client("203.0.113.9", forwarded: ["for=198.51.100.1"]) == "203.0.113.9")
        // Through the proxy: the address it appended; what the client wrote before it is not believed.
        #expect(Self.client("10.0.0.5", xff: ["198.51.100.1"]) == "198.51.100.1")
        #expect(Self.client("10.0.0.5", xff: ["6.6.6.6, 198.51.100.1"]) == "198.51.100.1")
        #expect(Self.client("10.0.0.5", xff: ["6.6.6.6", "198.51.100.1"]) == "198.51.100.1", "two header lines")
        // Two trusted proxies in a row: the walk goes past both.
        #expect(Self.client("10.0.0.5", xff: ["198.51.100.1, 192.0.2.10, 10.9.9.9"]) == "198.51.100.1")
        // Every hop trusted: the leftmost.
        #expect(Self.client("10.0.0.5", xff: ["10.1.1.1, 10.2.2.2"]) == "10.1.1.1")
        // No header: the proxy itself.
        #expect(Self.client("10.0.0.5") == "10.0.0.5")
        // Ports and brackets some proxies write; IPv6 in its canonical spelling.
        #expect(Self.client("10.0.0.5", xff: ["198.51.100.1:4711"]) == "198.51.100.1")
        #expect(Self.client("10.0.0.5", xff: ["[2001:DB8:0::1]:4711"]) == "2001:db8::1")
        #expect(Self.client("fd00::1", xff: ["2001:db8::2"]) == "2001:db8::2")
    }

    @Test func forwardedIsReadAsRFC7239Writes() {
        #expect(Self.client("10.0.0.5", forwarded: ["for=198.51.100.1;proto=https;by=10.0.0.5"]) == "198.51.100.1")
        #expect(Self.client("10.0.0.5", forwarded: [#"for="[2001:db8:cafe::17]:4711""#]) == "2001:db8:cafe::17")
        #expect(Self.client("10.0.0.5", forwarded: ["For=6.6.6.6, for=198.51.100.1"]) == "198.51.100.1")
        #expect(Self.client("10.0.0.5", forwarded: [#"for="198.51.100.1:80""#]) == "198.51.100.1")
    }

    /// Only the header the proxies write is read: behind two trusted proxies that append to
    /// X-Forwarded-For, a client's own Forwarded whose nearest hop names the outer proxy changes nothing.
    @Test func onlyTheConfiguredHeaderIsRead() {
        var headers = HTTPFields()
        headers.append(HTTPField(name: TrustedProxies.xForwardedFor, value: "198.51.100.1, 10.0.0.9"))
        headers.append(HTTPField(name: TrustedProxies.forwarded, value: "for=6.6.6.6, for=10.0.0.9"))
        #expect(Self.proxies.client(peer: "127.0.0.1", headers: headers) == "127.0.0.1", "127.0.0.1 not trusted")
        let two = try! TrustedProxies(parsing: ["10.0.0.9", "127.0.0.1"])
        #expect(two.client(peer: "127.0.0.1", headers: headers) == "198.51.100.1")
        let other = try! TrustedProxies(parsing: ["10.0.0.9", "127.0.0.1"], header: .forwarded)
        #expect(other.client(peer: "127.0.0.1", headers: headers) == "6.6.6.6", "what the operator chose")
        var onlyForwarded = HTTPFields()
        onlyForwarded.append(HTTPField(name: TrustedProxies.forwarded, value: "for=6.6.6.6"))
        #expect(two.client(peer: "127.0.0.1", headers: onlyForwarded) == "127.0.0.1")
    }

    @Test func whatIsNotAnAddressStopsTheWalkAtTheProxyThatSentIt() {
        for bad in ["unknown", "_hidden", "198.51.100", "1.2.3.4.5", "[2001:db8::1", "2001:db8::1]:1", "", "a b"] {
            #expect(Self.client("10.0.0.5", xff: [bad]) == "10.0.0.5", "\(bad.debugDescription)")
            #expect(Self.client("10.0.0.5", xff: ["198.51.100.1, \(bad), 10.9.9.9"]) == "10.9.9.9", "\(bad)")
        }
        #expect(Self.client("10.0.0.5", forwarded: ["for=unknown"]) == "10.0.0.5")
        #expect(Self.client("10.0.0.5", forwarded: [#"for="198.51.100.1"#]) == "10.0.0.5", "an unclosed quote")
        #expect(Self.client("10.0.0.5", forwarded: ["proto=https"]) == "10.0.0.5", "no for=")
        // A long chain: only its nearest entries are walked, so its beginning (the client's words) is not.
        let long = Array(repeating: "6.6.6.6", count: 40) + ["198.51.100.1"]
        #expect(Self.client("10.0.0.5", xff: [long.joined(separator: ",")]) == "198.51.100.1")
        let proxied = ["6.6.6.6"] + Array(repeating: "10.1.1.1", count: TrustedProxies.maxHops)
        #expect(Self.client("10.0.0.5", xff: [proxied.joined(separator: ",")]) == "10.1.1.1")
        // Ports: ASCII digits only, not empty.
        for bad in ["198.51.100.1:", "198.51.100.1:٣", "[2001:db8::1]:", "198.51.100.1:123456"] {
            #expect(Self.client("10.0.0.5", xff: [bad]) == "10.0.0.5", "\(bad)")
        }
    }

    /// On a live server the audit and the per-address throttle see the forwarded client, and only when
    /// the peer is trusted.
    @Test(arguments: Backend.available)
    func theAuditSeesTheForwardedClientOnlyFromATrustedProxy(_ backend: Backend) async throws {
        for trusted in [true, false] {
            try await withLiveServer(
                backend,
                configure: { c in
                    c.captcha = .off
                    if trusted { c.trustedProxies = try! TrustedProxies(parsing: ["127.0.0.1"]) }
                }
            ) { server, h in
                let user = trusted ? "proxied" : "direct"
                _ = try await KeyGateAPITests.call(
                    server,
                    "POST",
                    "/v1/accounts",
                    json: ["username": user, "password": "correct horse battery", "name": "A", "lastname": "B"]
                )
                var request = URLRequest(url: server.appendingPathComponent("/v1/sessions"))
                request.httpMethod = "POST"
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.setValue("6.6.6.6, 198.51.100.7", forHTTPHeaderField: "X-Forwarded-For")
                request.httpBody = try JSONSerialization.data(withJSONObject: ["username": user, "password": "wrong"])
                let (_, response) = try await URLSession.shared.data(for: request)
                #expect((response as? HTTPURLResponse)?.statusCode == 401)
                let account = try #require(try await h.storage.account(username: user))
                let events = try await h.storage.auditEvents(accountID: account.id, before: nil, limit: 5)
                let wrong = try #require(events.first { $0.outcome == "wrong-password" })
                #expect(wrong.address == (trusted ? "198.51.100.7" : "127.0.0.1"), "\(wrong.address)")
            }
        }
    }
}
