import Foundation
import HTTPTypes
import Hummingbird

#if canImport(Glibc)
import Glibc
#endif

/// The reverse proxies whose word about the client's address is taken (`--trusted-proxy CIDR`), and the
/// reading of that word from the one header they write (`--trusted-proxy-header`): `X-Forwarded-For`, or
/// `Forwarded` (RFC 7239, its `for=`).
///
/// Only a request whose peer is one of these networks has the header read at all; anyone else's is
/// ignored, so a client cannot choose the address its throttles and audit rows are kept under. Only the
/// one header is read: a proxy that appends to one passes the other on from the client unchanged, so a
/// client could write there whatever chain it likes. The chain is walked from the right (the hop nearest
/// this server) over trusted proxies: the first address that is not one is the client. An entry that is
/// not an address (`unknown`, an obfuscated name, garbage) stops the walk at the proxy that sent it; only
/// the nearest `maxHops` entries are walked (the proxies' own; a longer chain's beginning is the client's).
public struct TrustedProxies: Sendable, Equatable {
    /// The header the trusted proxies write the client's address into.
    public enum Header: String, Sendable, Equatable, CaseIterable {
        case xForwardedFor = "x-forwarded-for"
        case forwarded
    }

    struct Network: Sendable, Equatable {
        /// 4 bytes (IPv4) or 16 (IPv6).
        let bytes: [UInt8]
        let prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var left = prefix
            for (a, b) in zip(address, bytes) {
                guard left > 0 else { return true }
                let bits = min(8, left)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                guard a & mask == b & mask else { return false }
                left -= bits
            }
            return true
        }
    }

    /// Why a `--trusted-proxy` value was refused.
    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case invalid(String)

        public var description: String {
            switch self {
            case .invalid(let text):
                "--trusted-proxy \(text.debugDescription) is not an address or a network: give an IPv4 or IPv6 address, "
                    + "optionally with a prefix length, e.g. 10.0.0.0/8, 192.0.2.10 or fd00::/8"
            }
        }
    }

    /// The nearest entries of the header walked at most.
    static let maxHops = 32

    let networks: [Network]
    public let header: Header

    public init() {
        networks = []
        header = .xForwardedFor
    }

    /// Each value an address (`192.0.2.10`, `::1`) or a network (`10.0.0.0/8`, `fd00::/8`).
    public init(parsing values: [String], header: Header = .xForwardedFor) throws(ParseError) {
        self.header = header
        var networks: [Network] = []
        for value in values {
            let parts = value.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2, let bytes = Self.bytes(String(parts[0])) else { throw .invalid(value) }
            let width = bytes.count * 8
            var prefix = width
            if parts.count == 2 {
                guard let p = Int(parts[1]), (0...width).contains(p), parts[1].allSatisfy(\.isASCII) else {
                    throw .invalid(value)
                }
                prefix = p
            }
            networks.append(Network(bytes: bytes, prefix: prefix))
        }
        self.networks = networks
    }

    public var isEmpty: Bool { networks.isEmpty }

    /// Whether `address` (as `ClientAddress` spells it) is one of the trusted proxies.
    func contains(_ address: String) -> Bool {
        guard let bytes = Self.bytes(address) else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// The client's address for a request from `peer`.
    func client(peer: String, headers: HTTPFields) -> String {
        guard !networks.isEmpty, contains(peer) else { return peer }
        let read =
            switch header {
            case .xForwardedFor: Self.hops(headers[values: Self.xForwardedFor], Self.plainHop)
            case .forwarded: Self.hops(headers[values: Self.forwarded], Self.forwardedFor)
            }
        guard let hops = read else { return peer }
        var current = peer
        for hop in hops.suffix(Self.maxHops).reversed() {
            guard let address = hop else { return current }
            current = address
            if !contains(address) { return address }
        }
        return current
    }

    static let forwarded = HTTPField.Name("Forwarded")!
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!

    /// The comma-separated entries of every line of a header, each read by `read` (nil: not an address);
    /// nil without the header.
    static func hops(_ lines: [String], _ read: (Substring) -> String?) -> [String?]? {
        guard !lines.isEmpty else { return nil }
        return lines.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map {
            read($0.trimmingCharacters(in: .whitespaces)[...])
        }
    }

    /// An `X-Forwarded-For` entry: an address, possibly `[v6]:port` or `v4:port` as some proxies write.
    static func plainHop(_ text: Substring) -> String? {
        var t = text
        if t.hasPrefix("[") {
            guard let close = t.firstIndex(of: "]") else { return nil }
            let rest = t[t.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && isPort(rest.dropFirst())) else { return nil }
            t = t[t.index(after: t.startIndex)..<close]
        } else if t.filter({ $0 == ":" }).count == 1, let colon = t.firstIndex(of: ":") {
            guard isPort(t[t.index(after: colon)...]) else { return nil }
            t = t[..<colon]
        }
        let text = String(t)
        guard bytes(text) != nil else { return nil }
        return ClientAddress.normalize(text)
    }

    static func isPort(_ text: Substring) -> Bool {
        !text.isEmpty && text.count <= 5 && text.allSatisfy { $0.isASCII && $0.isWholeNumber }
    }

    /// A `Forwarded` element's `for=` (RFC 7239 §4, §6): a token or a quoted string; nil when it has none
    /// or names no address.
    static func forwardedFor(_ element: Substring) -> String? {
        for pair in element.split(separator: ";") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == "for" else { continue }
            var value = kv[1].trimmingCharacters(in: .whitespaces)[...]
            if value.hasPrefix("\"") {
                guard value.count >= 2, value.hasSuffix("\"") else { return nil }
                value = value.dropFirst().dropLast()
            }
            return plainHop(value)
        }
        return nil
    }

    /// The address's bytes: 4 for IPv4 (IPv4-mapped IPv6 included, as `ClientAddress` spells it), 16 for
    /// IPv6; nil when it is not one.
    static func bytes(_ text: String) -> [UInt8]? {
        let address = ClientAddress.normalize(text)
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, address, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}

/// Puts the client's address, as the trusted proxies forward it, where every route reads it (first of
/// all middleware, so that throttles, the captcha's risk rule and the audit all see it).
struct TrustedProxyMiddleware: RouterMiddleware {
    let proxies: TrustedProxies

    func handle(
        _ request: Request,
        context: AppContext,
        next: (Request, AppContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.peerAddress = proxies.client(peer: context.peerAddress, headers: request.headers)
        return try await next(request, context)
    }
}
