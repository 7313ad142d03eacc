import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where the server may send a push (docs/PROTOCOL.md §2.2): a subscription names a URL the server will
/// request, so without this rule anyone with a device could make the server reach its own network (SSRF).
/// An endpoint is `https`, with a host whose every address is public (not loopback, private, link-local,
/// shared, documentation, multicast or reserved, RFC 6890); a host the administrator allows by name
/// (`push-allowed-hosts`: a self-hosted ntfy, a test's loopback service) may have any address, and `http`.
struct PushEndpointPolicy: Sendable, Equatable {
    /// Host names (lower case) whose addresses are not checked.
    let allowedHosts: Set<String>

    /// Real endpoints are under 500 bytes (FCM, Mozilla, Apple, Windows, ntfy); this bounds what is stored.
    static let maxEndpointBytes = 1024

    init(allowedHosts: [String] = []) {
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
    }

    /// The endpoint, checked for its form and the scheme its host may use; whether its addresses are public
    /// is `refusal(addresses:host:)`'s, after resolving.
    func check(endpoint text: String) throws(NotificationError) -> URL {
        guard text.utf8.count <= Self.maxEndpointBytes else {
            throw .invalidSubscription(field: "endpoint", reason: "at most \(Self.maxEndpointBytes) bytes")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty, let url = components.url
        else {
            throw .invalidSubscription(field: "endpoint", reason: "an absolute https:// URL")
        }
        guard components.user == nil, components.password == nil, components.fragment == nil else {
            throw .invalidSubscription(field: "endpoint", reason: "a URL without credentials or fragment")
        }
        let allowed = allowedHosts.contains(Self.bare(host))
        guard scheme == "https" || (scheme == "http" && allowed) else {
            throw .invalidSubscription(field: "endpoint", reason: "an https:// URL")
        }
        return url
    }

    func allows(host: String) -> Bool { allowedHosts.contains(Self.bare(host.lowercased())) }

    /// Why these addresses of `host` may not be sent to, or nil: every one must be public unless the host
    /// is allowed by name. No address at all is a refusal too.
    func refusal(addresses: [[UInt8]], host: String) -> String? {
        if allows(host: host) { return nil }
        if addresses.isEmpty { return "\(host) has no address" }
        for a in addresses where !Self.isPublic(a) {
            return "\(host) resolves to \(Self.text(a)), not a public address"
        }
        return nil
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
