#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A message sealed to recipient device keys and signed by the sender's device key (docs/SPEC.md §8).
/// Parsing checks the structure only; `open` verifies the signature and decrypts.
public struct MessageEnvelope: Equatable, Sendable {
    public static let magic: [UInt8] = Array("CSMSG".utf8) + [0x0D, 0x0A, 0x1A]
    public static let version: UInt8 = 0x01
    /// Largest plaintext: 1 MiB.
    public static let maxPlaintext = 1 << 20
    public static let maxRecipients = 256
    public static let maxContentType = 127
    public static let defaultContentType = "text/plain;charset=utf-8"
    static let tagSize = 16
    static let signatureSize = 64
    static let stanzaSize = 16 + 65 + 48
    /// The largest envelope in bytes (§8.5).
    public static let maxSize =
        8 + 1 + 16 + 16 + 8 + 1 + maxContentType + 2 + maxRecipients * stanzaSize + 4
        + maxPlaintext + tagSize + signatureSize

    static let messageKeyInfo = Array("countersign/v1 message key".utf8)
    static let payloadInfo = Array("countersign/v1 message payload".utf8)
    static let signaturePrefix = Array("countersign/v1 message signature".utf8) + [0x00]

    public let senderKeyID: Fingerprint
    public let messageID: [UInt8]
    /// Milliseconds since the Unix epoch, on the sender's clock.
    public let created: UInt64
    public let contentType: String
    /// Sorted by key ID, strictly increasing.
    public let stanzas: [RecipientStanza]
    public let body: [UInt8]
    public let signature: [UInt8]

    public var recipients: [Fingerprint] { stanzas.map { Fingerprint(bytes: $0.keyID) } }

    /// Every byte before `body`: what the body's AEAD authenticates.
    var header: [UInt8] {
        var out = Self.magic + [Self.version] + senderKeyID.bytes + messageID
        out.appendBigEndian(created, bytes: 8)
        out.append(UInt8(contentType.utf8.count))
        out += Array(contentType.utf8)
        out.appendBigEndian(UInt64(stanzas.count), bytes: 2)
        for s in stanzas { out += s.bytes }
        out.appendBigEndian(UInt64(body.count), bytes: 4)
        return out
    }

    /// The canonical encoding.
    public var bytes: [UInt8] { header + body + signature }

    init(
        senderKeyID: Fingerprint,
        messageID: [UInt8],
        created: UInt64,
        contentType: String,
        stanzas: [RecipientStanza],
        body: [UInt8],
        signature: [UInt8]
    ) {
        self.senderKeyID = senderKeyID
        self.messageID = messageID
        self.created = created
        self.contentType = contentType
        self.stanzas = stanzas
        self.body = body
        self.signature = signature
    }

    /// Parses the canonical encoding, refusing anything else (§8.4 steps 1–2).
    public init(bytes input: [UInt8]) throws {
        guard input.count >= 8, Array(input[0..<8]) == Self.magic else { throw MessageError.unknownFormat }
        var r = Reader(input, at: 8)
        let version = try r.byte("version")
        guard version == Self.version else { throw MessageError.unknownVersion(version) }
        let sender = try r.take(16, "sender key ID")
        let messageID = try r.take(16, "message ID")
        let created = try r.integer(8, "creation time")
        let typeLength = Int(try r.byte("content type length"))
        guard (1...Self.maxContentType).contains(typeLength) else {
            throw MessageError.malformed("content type length \(typeLength) is outside 1 to \(Self.maxContentType)")
        }
        let typeBytes = try r.take(typeLength, "content type")
        guard typeBytes.allSatisfy(Self.isContentTypeByte) else {
            throw MessageError.malformed("the content type holds a byte outside printable ASCII without spaces")
        }
        let n = Int(try r.integer(2, "recipient count"))
        guard (1...Self.maxRecipients).contains(n) else {
            throw MessageError.malformed("recipient count \(n) is outside 1 to \(Self.maxRecipients)")
        }
        var stanzas: [RecipientStanza] = []
        stanzas.reserveCapacity(n)
        for i in 0..<n {
            let s = try r.take(Self.stanzaSize, "recipient \(i + 1)")
            let stanza = RecipientStanza(keyID: Array(s[0..<16]), enc: Array(s[16..<81]), wrappedKey: Array(s[81...]))
            if let previous = stanzas.last, !previous.keyID.lexicographicallyPrecedes(stanza.keyID) {
                throw MessageError.malformed(
                    "recipient key IDs are not in strictly increasing order (a key twice, or reordered)"
                )
            }
            stanzas.append(stanza)
        }
        let bodyLength = Int(try r.integer(4, "body length"))
        guard bodyLength >= Self.tagSize else {
            throw MessageError.malformed("body length \(bodyLength) is shorter than a tag")
        }
        guard bodyLength <= Self.maxPlaintext + Self.tagSize else { throw MessageError.tooLarge(limit: Self.maxSize) }
        let body = try r.take(bodyLength, "body")
        let signature = try r.take(Self.signatureSize, "signature")
        guard r.atEnd else { throw MessageError.malformed("\(input.count - r.offset) bytes after the signature") }
        self.init(
            senderKeyID: Fingerprint(bytes: sender),
            messageID: messageID,
            created: created,
            contentType: String(decoding: typeBytes, as: UTF8.self),
            stanzas: stanzas,
            body: body,
            signature: signature
        )
    }

    static func isContentTypeByte(_ b: UInt8) -> Bool { (0x21...0x7E).contains(b) }

    /// A bounds-checked cursor whose errors name the field that was cut short.
    struct Reader {
        let bytes: [UInt8]
        var offset: Int
        init(_ bytes: [UInt8], at offset: Int) {
            self.bytes = bytes
            self.offset = offset
        }
        var atEnd: Bool { offset == bytes.count }

        mutating func take(_ n: Int, _ field: String) throws -> [UInt8] {
            guard bytes.count - offset >= n else {
                throw MessageError.malformed("the envelope ends inside the \(field)")
            }
            defer { offset += n }
            return Array(bytes[offset..<offset + n])
        }

        mutating func byte(_ field: String) throws -> UInt8 { try take(1, field)[0] }

        mutating func integer(_ n: Int, _ field: String) throws -> UInt64 {
            try take(n, field).reduce(0) { $0 << 8 | UInt64($1) }
        }
    }
}

extension Array where Element == UInt8 {
    mutating func appendBigEndian(_ value: UInt64, bytes n: Int) {
        for i in stride(from: n - 1, through: 0, by: -1) { append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }
}
