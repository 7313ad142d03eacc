import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where the server may send a push (docs/PROTOCOL.md §2.2): a subscription names a URL the server will
/// request, so without this rule anyone with a device could make the server reach its own network (SSRF).
/// An endpoint is `https`, its host a plain name (letters, digits, dots, hyphens) or an IP literal, its port 1 to
/// 65535, and every address of the host public (not loopback, private, link-local, shared, documentation,
/// multicast or reserved, RFC 6890). A host the administrator allows (`push-allowed-hosts`: `HOST` for any port,
/// `HOST:PORT` for one; a self-hosted ntfy, a test's loopback service) may have any address, and `http`.
struct PushEndpointPolicy: Sendable, Equatable {
    /// `host` or `host:port` entries, lower case (IPv6 with a port bracketed: `[::1]:8080`).
    let allowedHosts: Set<String>

    /// Real endpoints are under 500 bytes (FCM, Mozilla, Apple, Windows, ntfy); this bounds what is stored.
    static let maxEndpointBytes = 1024

    init(allowedHosts: [String] = []) {
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
    }

    /// A checked endpoint: the URL as it is stored and requested (scheme and host in lower case), its origin
    /// (the push service: queues, the VAPID audience), its host as requested, and whether that is an IP literal.
    struct Endpoint: Sendable, Equatable {
        let url: URL
        let text: String
        let origin: String
        /// The host as the URL spells it (an IPv6 literal with its brackets).
        let host: String
        let port: Int
        let isAddress: Bool
        let allowed: Bool
    }

    /// The endpoint, checked for its form and the scheme its host may use; whether its addresses are public
    /// is `refusal(addresses:)`'s, after resolving.
    func check(endpoint text: String) throws(NotificationError) -> Endpoint {
        guard text.utf8.count <= Self.maxEndpointBytes else {
            throw .invalidSubscription(field: "endpoint", reason: "at most \(Self.maxEndpointBytes) bytes")
        }
        let absolute = NotificationError.invalidSubscription(field: "endpoint", reason: "an absolute https:// URL")
        guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(),
            let rawHost = c.percentEncodedHost?.lowercased(), !rawHost.isEmpty
        else { throw absolute }
        guard c.user == nil, c.password == nil, c.fragment == nil else {
            throw .invalidSubscription(field: "endpoint", reason: "a URL without credentials or fragment")
        }
        guard scheme == "https" || scheme == "http" else {
            throw .invalidSubscription(field: "endpoint", reason: "an https:// URL")
        }
        // A name, or an address; nothing percent-encoded (a host that reads one way here and another way to
        // the HTTP client would not be the host that was checked).
        let isAddress: Bool
        if rawHost.hasPrefix("[") && rawHost.hasSuffix("]") {
            guard Self.ipv6(String(rawHost.dropFirst().dropLast())) != nil else {
                throw .invalidSubscription(field: "endpoint", reason: "a host name or an IP address")
            }
            isAddress = true
        } else {
            guard rawHost.wholeMatch(of: #/[a-z0-9-]+(\.[a-z0-9-]+)*/#) != nil else {
                throw .invalidSubscription(field: "endpoint", reason: "a host name or an IP address")
            }
            isAddress = TrustedProxies.bytes(rawHost) != nil
        }
        if let port = c.port, !(1...65535).contains(port) {
            throw .invalidSubscription(field: "endpoint", reason: "a port from 1 to 65535")
        }
        let port = c.port ?? (scheme == "https" ? 443 : 80)
        let allowed = allows(host: rawHost, port: port)
        guard scheme == "https" || allowed else {
            throw .invalidSubscription(field: "endpoint", reason: "an https:// URL")
        }
        // The default port is not written: one push service, one origin (its queue, its VAPID audience).
        let explicit = c.port.flatMap { $0 == (scheme == "https" ? 443 : 80) ? nil : $0 }
        let origin = "\(scheme)://\(rawHost)" + (explicit.map { ":\($0)" } ?? "")
        let rest = c.percentEncodedPath + (c.percentEncodedQuery.map { "?" + $0 } ?? "")
        let canonical = origin + (rest.hasPrefix("/") || rest.isEmpty ? rest : "/" + rest)
        guard let url = URL(string: canonical) else { throw absolute }
        return Endpoint(
            url: url,
            text: canonical,
            origin: origin,
            host: rawHost,
            port: port,
            isAddress: isAddress,
            allowed: allowed
        )
    }

    /// Whether the administrator allowed this host, on any port or on this one.
    func allows(host: String, port: Int) -> Bool {
        let h = host.lowercased()
        let bare = Self.bare(h)
        let bracketed = bare.contains(":") ? "[\(bare)]" : bare
        return allowedHosts.contains(bare) || allowedHosts.contains("\(bracketed):\(port)")
    }

    /// Why these addresses of a host may not be sent to, or nil: every one must be public. No address at all
    /// is a refusal too. Said to whoever subscribed without the addresses (which would tell them what this
    /// server's DNS says of internal names); the log has them.
    func refusal(addresses: [[UInt8]]) -> String? {
        if addresses.isEmpty { return "it has no address" }
        for a in addresses where !Self.isPublic(a) {
            return "it resolves to \(Self.text(a)), not a public address"
        }
        return nil
    }

    /// An IPv6 address's 16 bytes (an IPv4-mapped one too), or nil.
    static func ipv6(_ text: String) -> [UInt8]? {
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        return withUnsafeBytes(of: &v6) { Array($0) }
    }

    /// `[::1]` is spelt with brackets in a URL and without in the setting.
    static func bare(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    // MARK: Addresses

    /// Special-purpose IPv4 networks (RFC 6890 and its updates) no push service is on.
    private static let v4Special: [(UInt32, Int)] = [
        (0x0000_0000, 8),  // this network
        (0x0A00_0000, 8),  // private
        (0x6440_0000, 10),  // shared address space (carrier NAT)
        (0x7F00_0000, 8),  // loopback
        (0xA9FE_0000, 16),  // link local (cloud metadata services live here)
        (0xAC10_0000, 12),  // private
        (0xC000_0000, 24),  // IETF protocol assignments
        (0xC000_0200, 24),  // documentation
        (0xC058_6300, 24),  // 6to4 relay anycast
        (0xC0A8_0000, 16),  // private
        (0xC612_0000, 15),  // benchmarking
        (0xC633_6400, 24),  // documentation
        (0xCB00_7100, 24),  // documentation
        (0xE000_0000, 4),  // multicast
        (0xF000_0000, 4),  // reserved, and the limited broadcast address
    ]

    static func isPublic(_ address: [UInt8]) -> Bool {
        switch address.count {
        case 4:
            let v = address.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return !v4Special.contains { network, prefix in v >> (32 - prefix) == network >> (32 - prefix) }
        case 16:
            // An IPv4 address inside IPv6 (mapped, NAT64, 6to4, compatible) is judged as that address.
            if address[0..<10].allSatisfy({ $0 == 0 }) && address[10] == 0xFF && address[11] == 0xFF {
                return isPublic(Array(address[12..<16]))
            }
            if address[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] {
                return isPublic(Array(address[12..<16]))
            }
            if address[0] == 0x20 && address[1] == 0x02 { return isPublic(Array(address[2..<6])) }
            if address[0..<12].allSatisfy({ $0 == 0 }) { return false }  // ::, ::1, IPv4-compatible
            let first = address[0]
            if first & 0xFE == 0xFC { return false }  // unique local fc00::/7
            if first == 0xFE && address[1] & 0xC0 == 0x80 { return false }  // link local fe80::/10
            if first == 0xFE && address[1] & 0xC0 == 0xC0 { return false }  // site local fec0::/10
            if first == 0xFF { return false }  // multicast
            if address[0..<4] == [0x20, 0x01, 0x0D, 0xB8] { return false }  // documentation
            if address[0] == 0x3F && address[1] == 0xFF && address[2] & 0xF0 == 0 { return false }  // doc. 3fff::/20
            if address[0..<2] == [0x20, 0x01] && address[2] < 0x02 { return false }  // 2001::/23 (Teredo, ORCHID…)
            if address[0..<2] == [0x01, 0x00] && address[2..<8].allSatisfy({ $0 == 0 }) { return false }  // discard
            return first & 0xE0 == 0x20  // only global unicast 2000::/3 is routed
        default:
            return false
        }
    }

    static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = address.count == 4 ? AF_INET : AF_INET6
        let ok = address.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        return ok ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    }

    /// The host's addresses (getaddrinfo, so /etc/hosts too), or [] when it has none. Blocking: call it off
    /// the event loops.
    static func resolve(_ host: String) -> [[UInt8]] {
        let name = bare(host)
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(list) }
        var out: [[UInt8]] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let n = node {
            if let sa = n.pointee.ai_addr {
                if n.pointee.ai_family == AF_INET {
                    var a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                    out.append(withUnsafeBytes(of: &a) { Array($0) })
                } else if n.pointee.ai_family == AF_INET6 {
                    var a = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                    out.append(withUnsafeBytes(of: &a) { Array($0) })
                }
            }
            node = n.pointee.ai_next
        }
        var seen = Set<[UInt8]>()
        return out.filter { seen.insert($0).inserted }
    }
}
