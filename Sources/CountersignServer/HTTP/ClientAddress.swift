import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The one spelling of a client address that throttles, the `risk` captcha and the audit log use.
///
/// A dual-stack socket (`--host ::`) reports an IPv4 peer as `::ffff:a.b.c.d`. Left as is, every IPv4
/// client would fall in the one IPv6 /64 `::ffff:0:0/64` and share a single rate-limit bucket, so one
/// guesser could lock every IPv4 user out. IPv4-mapped (`::ffff:a.b.c.d`) and the deprecated
/// IPv4-compatible (`::a.b.c.d`, RFC 4291 §2.5.5.1) forms are therefore turned back into IPv4; other
/// IPv6 addresses get their canonical text (RFC 5952), so `2001:DB8::1` and `2001:db8:0::1` agree.
enum ClientAddress {
    static func normalize(_ address: String) -> String {
        guard address.contains(":") else { return address }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        let b = withUnsafeBytes(of: &v6) { Array($0) }
        let zeroPrefix = b[0..<10].allSatisfy { $0 == 0 }
        let mapped = zeroPrefix && b[10] == 0xff && b[11] == 0xff
        // `::` and `::1` are IPv6's own unspecified and loopback addresses, not IPv4-compatible ones.
        let compatible =
            zeroPrefix && b[10] == 0 && b[11] == 0 && b[12..<16].contains { $0 != 0 }
            && !(b[12..<15].allSatisfy { $0 == 0 } && b[15] <= 1)
        if mapped || compatible { return "\(b[12]).\(b[13]).\(b[14]).\(b[15])" }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &v6, &text, socklen_t(text.count)) != nil else { return address }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
