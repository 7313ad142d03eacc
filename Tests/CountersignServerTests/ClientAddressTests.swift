import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import CountersignServer

/// Issue 8.1: IPv4 clients of a dual-stack socket keep their own address for throttles, captcha and audit.
@Suite(.closesStorage) struct ClientAddressTests {
    @Test func mappedAndCompatibleAddressesBecomeIPv4() {
        #expect(ClientAddress.normalize("::ffff:127.0.0.2") == "127.0.0.2")
        #expect(ClientAddress.normalize("::FFFF:203.0.113.7") == "203.0.113.7")
        #expect(ClientAddress.normalize("::ffff:7f00:2") == "127.0.0.2", "hex spelling of the same mapped address")
        #expect(ClientAddress.normalize("0:0:0:0:0:ffff:c000:0201") == "192.0.2.1")
        #expect(ClientAddress.normalize("::192.0.2.1") == "192.0.2.1", "IPv4-compatible (deprecated) form")
        #expect(ClientAddress.normalize("::1") == "::1", "IPv6 loopback stays IPv6")
        #expect(ClientAddress.normalize("::") == "::")
        #expect(ClientAddress.normalize("2001:DB8:0::1") == "2001:db8::1", "canonical IPv6 text")
        #expect(ClientAddress.normalize("127.0.0.1") == "127.0.0.1")
        #expect(ClientAddress.normalize("unknown") == "unknown")
        #expect(ClientAddress.normalize("::ffff:1.2.3.4%eth0") == "::ffff:1.2.3.4%eth0", "not an address: left alone")
        // The throttle key of two mapped IPv4 clients differs; before, both were ::ffff:0:0/64.
        #expect(AddressThrottle.key("::ffff:127.0.0.2") != AddressThrottle.key("::ffff:127.0.0.3"))
        #expect(AddressThrottle.key("::ffff:127.0.0.2") == "127.0.0.2")
        #expect(AddressThrottle.key("2001:db8::1") == AddressThrottle.key("2001:db8::2"), "IPv6 still per /64")
        #expect(RequestOrigin(address: "::ffff:10.1.2.3", userAgent: "").address == "10.1.2.3")
    }

    static func signInRequest(_ username: String, _ password: String) -> String {
        let body = #"{"username":"\#(username)","password":"\#(password)"}"#
        return
            "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
            + body
    }

    static func status(_ response: String) -> Int {
        Int(response.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
    }

    /// The reproduction from the issue: `--host ::`, clients 127.0.0.2 and up. One address's failures
    /// exhaust its own bucket only, and the audit log records the IPv4 address.
    @Test func dualStackIPv4ClientsHaveABucketEach() async throws {
        let h = try await Harness.make(.sqlite) { $0.signInFailuresPerAddress = .init(capacity: 5, window: 600) }
        try await h.service.register(
            username: "mapped",
            password: "correct horse",
            name: "M",
            lastname: "A",
            captcha: nil,
            origin: RequestOrigin(address: "127.0.0.1", userAgent: "")
        )
        let router = try h.router()
        let app = Application(router: router, configuration: .init(address: .hostname("::", port: 0)))
        do {
            try await app.test(.live) { client in
                let port = client.port!
                for name in ["mapped", "ghost1", "ghost2", "ghost3", "ghost4"] {
                    #expect(
                        Self.status(
                            try await RawConnection.exchange(
                                port: port,
                                from: "127.0.0.2",
                                Self.signInRequest(name, "wrong password")
                            )
                        ) == 401
                    )
                }
                let sixth = try await RawConnection.exchange(
                    port: port,
                    from: "127.0.0.2",
                    Self.signInRequest("ghost5", "wrong password")
                )
                #expect(Self.status(sixth) == 429 && sixth.contains("rate-limited"), "127.0.0.2 spent its own bucket")
                for source in ["127.0.0.3", "127.0.0.4", "127.0.0.9"] {
                    let r = try await RawConnection.exchange(
                        port: port,
                        from: source,
                        Self.signInRequest("someone\(source.suffix(1))", "wrong password")
                    )
                    #expect(
                        Self.status(r) == 401,
                        "\(source) is not throttled by 127.0.0.2's failures: \(r.prefix(80))"
                    )
                }
            }
        } catch {
            await h.close()
            throw error
        }
        let account = try #require(try await h.store.account(username: "mapped"))
        let addresses = Set(
            try await h.store.auditEvents(accountID: account.id, before: nil, limit: 100).map(\.address)
        )
        #expect(addresses == ["127.0.0.1", "127.0.0.2"], "audit records IPv4, not ::ffff:…: \(addresses)")
        await h.close()
    }
}
