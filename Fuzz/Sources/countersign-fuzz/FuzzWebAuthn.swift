import CountersignCrypto

/// WebAuthn's inputs (docs/SPEC.md §13): CBOR, COSE keys and attestation objects, authenticator data
/// and clientDataJSON, each as an authenticator or a browser could send it.
enum FuzzWebAuthn {
    /// CBOR items, COSE keys and attestation objects. A whole item is also its own prefix, ending at the
    /// end; a COSE key reads again from the bytes it keeps.
    static func cborCOSE(_ data: [UInt8]) {
        if let item = try? CBOR(decoding: data) {
            guard let (prefix, end) = try? CBOR.decodePrefix(data[...]), prefix == item, end == data.count else {
                finding("a CBOR item that decodes whole does not decode as a prefix to the same item")
            }
        }
        if let key = try? COSEKey(decoding: data) {
            guard let again = try? COSEKey(decoding: key.encoded), again.algorithm == key.algorithm else {
                finding("a COSE key does not decode again from its encoded bytes")
            }
            _ = key.isValidSignature(Array(data.prefix(72)), for: data)
        }
        if let attestation = try? AttestationObject(decoding: data) {
            _ = attestation.credential
            try? attestation.verify(clientDataHash: [UInt8](repeating: 0, count: 32))
        }
    }

    /// What an assertion is checked against: a fixed clientDataJSON and the vectors' key as COSE ES256.
    static let getClientData = try! ClientData(
        parsing: Array(#"{"type":"webauthn.get","challenge":"Y2hhbGxlbmdl","origin":"http://localhost:8080"}"#.utf8)
    )
    static let vectorKey: COSEKey = {
        let point = FuzzKeys.vectorIdentity.publicKey.point  // 0x04 || X || Y
        let map = [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20] + point[1..<33] + [0x22, 0x58, 0x20]
        return try! COSEKey(decoding: map + point[33..<65])
    }()

    /// Authenticator data as an assertion or a registration carries it, then an assertion's signature (the
    /// input's last bytes) checked over it under the credential it names, or the vectors' key.
    static func authenticatorData(_ data: [UInt8]) {
        guard let parsed = try? AuthenticatorData(parsing: data) else { return }
        guard parsed.bytes == data else { finding("authenticator data keeps other bytes than it was given") }
        var key = vectorKey
        if let credential = parsed.attested {
            guard let again = try? COSEKey(decoding: credential.publicKey.encoded),
                again.algorithm == credential.publicKey.algorithm
            else { finding("an attested credential's key does not decode again from its encoded bytes") }
            key = credential.publicKey
        }
        try? WebAuthnAssertion.verify(
            signature: Array(data.suffix(72)),
            authenticatorData: parsed,
            clientData: getClientData,
            key: key
        )
    }

    static func clientData(_ data: [UInt8]) {
        _ = try? ClientData(parsing: data)
    }
}
