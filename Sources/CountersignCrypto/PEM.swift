#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// PEM armor (RFC 7468), read leniently about line endings and strictly about everything else.
public struct PEM: Equatable, Sendable {
    public var label: String
    public var der: [UInt8]

    public init(label: String, der: [UInt8]) {
        self.label = label
        self.der = der
    }

    /// Parses the first PEM block in `text`. Text before the block is ignored (OpenSSL writes
    /// "Bag Attributes" there); text after it must be whitespace.
    public init(parsing text: String) throws {
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .map { $0.trimmingSpaces() }
        guard let begin = lines.firstIndex(where: { $0.hasPrefix("-----BEGIN ") && $0.hasSuffix("-----") }) else {
            throw KeyError.malformedPEM("no -----BEGIN …----- line")
        }
        let label = String(lines[begin].dropFirst(11).dropLast(5))
        guard let end = lines[(begin + 1)...].firstIndex(where: { $0.hasPrefix("-----END") }) else {
            throw KeyError.malformedPEM("no -----END \(label)----- line (truncated file?)")
        }
        guard lines[end] == "-----END \(label)-----" else {
            throw KeyError.malformedPEM("BEGIN \(label) does not match \(lines[end])")
        }
        guard lines[(end + 1)...].allSatisfy({ $0.isEmpty }) else {
            throw KeyError.malformedPEM("data after the END line")
        }
        let body = lines[(begin + 1)..<end].joined()
        guard !body.contains(":") else {
            throw KeyError.malformedPEM(
                "legacy PEM headers (Proc-Type/DEK-Info) are not supported; convert with `openssl pkcs8 -topk8`"
            )
        }
        guard let der = Data(base64Encoded: body), !der.isEmpty, der.base64EncodedString() == body else {
            throw KeyError.malformedPEM("the base64 between the armor lines is invalid")
        }
        self.label = label
        self.der = Array(der)
    }

    /// Standard PEM: 64-character lines, LF.
    public var text: String { armor(lineEnding: "\n") }

    /// PEM with CRLF line endings, as Foundation writes with `.lineLength64Characters`.
    public func armor(lineEnding: String) -> String {
        let b64 = Data(der).base64EncodedString()
        var out = "-----BEGIN \(label)-----" + lineEnding
        var i = b64.startIndex
        while i < b64.endIndex {
            let j = b64.index(i, offsetBy: 64, limitedBy: b64.endIndex) ?? b64.endIndex
            out += b64[i..<j] + lineEnding
            i = j
        }
        return out + "-----END \(label)-----" + lineEnding
    }
}
