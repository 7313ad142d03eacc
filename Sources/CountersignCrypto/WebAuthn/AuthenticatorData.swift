/// The authenticator data of a registration or an assertion (docs/SPEC.md §13.3), parsed strictly.
public struct AuthenticatorData: Sendable {
    public struct Flags: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let userPresent = Flags(rawValue: 0x01)
        public static let userVerified = Flags(rawValue: 0x04)
        public static let backupEligible = Flags(rawValue: 0x08)
        public static let backedUp = Flags(rawValue: 0x10)
        public static let attestedCredential = Flags(rawValue: 0x40)
        public static let extensions = Flags(rawValue: 0x80)
    }

    public struct AttestedCredential: Sendable {
        public let aaguid: [UInt8]
        public let credentialID: [UInt8]
        public let publicKey: COSEKey
    }

    public static let maxCredentialIDLength = 1023

    public let bytes: [UInt8]
    public let rpIDHash: [UInt8]
    public let flags: Flags
    public let signCount: UInt32
    public let attested: AttestedCredential?
    public let extensions: CBOR?

    public init(parsing bytes: [UInt8]) throws(WebAuthnError) {
        guard bytes.count >= 37 else { throw .malformed("authenticator data of \(bytes.count) bytes (at least 37)") }
        guard bytes.count <= CBOR.maxSize else { throw .malformed("authenticator data over \(CBOR.maxSize) bytes") }
        self.bytes = bytes
        rpIDHash = Array(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        // 0x02 and 0x20 are reserved for future use and ignored, as WebAuthn asks.
        guard flags.contains(.backupEligible) || !flags.contains(.backedUp) else {
            throw .malformed("the backed-up flag is set on a credential that is not backup eligible")
        }
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var at = 37
        if flags.contains(.attestedCredential) {
            guard bytes.count >= at + 18 else { throw .malformed("attested credential data is cut short") }
            let aaguid = Array(bytes[at..<at + 16])
            let length = Int(bytes[at + 16]) << 8 | Int(bytes[at + 17])
            at += 18
            guard (16...Self.maxCredentialIDLength).contains(length) else {
                throw .malformed("a credential ID of \(length) bytes (16 to \(Self.maxCredentialIDLength))")
            }
            guard bytes.count >= at + length else { throw .malformed("the credential ID is cut short") }
            let credentialID = Array(bytes[at..<at + length])
            at += length
            let (key, end) = try CBOR.decodePrefix(bytes[at...])
            let publicKey = try COSEKey(key, encoded: Array(bytes[at..<end]))
            at = end
            attested = AttestedCredential(aaguid: aaguid, credentialID: credentialID, publicKey: publicKey)
        } else {
            attested = nil
        }
        if flags.contains(.extensions) {
            let (ext, end) = try CBOR.decodePrefix(bytes[at...])
            guard ext.entries != nil else { throw .malformed("the authenticator extensions are not a map") }
            extensions = ext
            at = end
        } else {
            extensions = nil
        }
        guard at == bytes.count else { throw .malformed("\(bytes.count - at) bytes after the authenticator data") }
    }
}
