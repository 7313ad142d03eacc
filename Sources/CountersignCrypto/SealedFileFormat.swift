import Crypto

/// Constants and derivations of the version 1 sealed file (docs/SPEC.md §4).
package enum SealedFileFormat {
    static let magic: [UInt8] = Array("CSEAL".utf8) + [0x0d, 0x0a, 0x1a]
    static let version: UInt8 = 1
    static let flagSigned: UInt8 = 0x01
    static let saltLength = 16
    static let keyIDLength = 16
    static let encLength = 65
    static let wrappedKeyLength = 48
    static let stanzaLength = keyIDLength + encLength + wrappedKeyLength
    static let macLength = 32
    static let fixedHeaderLength = 8 + 1 + 1 + saltLength + 2  // before the stanzas
    static let maxRecipients = 256
    package static let chunkSize = 64 * 1024
    /// Chunks sealed in parallel per batch: 1 MiB, enough to keep two cores busy between writes.
    static let batchChunks = 16
    static let tagLength = 16
    package static let sealedChunkSize = chunkSize + tagLength
    static let signatureBlockLength = 65 + 64 + tagLength
    static let maxNameLength = 255

    static let fileKeyInfo = Array("countersign/v1 file key".utf8)
    static let headerInfo = Array("countersign/v1 header".utf8)
    static let payloadInfo = Array("countersign/v1 payload".utf8)
    static let signatureInfo = Array("countersign/v1 signature".utf8)
    static let signaturePrefix = Array("countersign/v1 signature".utf8) + [0]

    static func headerKey(_ fileKey: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: fileKey),
            salt: [UInt8](),
            info: headerInfo,
            outputByteCount: 32
        )
    }

    static func payloadKey(_ fileKey: [UInt8], salt: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: fileKey),
            salt: salt,
            info: payloadInfo,
            outputByteCount: 32
        )
    }

    static func signatureKey(_ fileKey: [UInt8], salt: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: fileKey),
            salt: salt,
            info: signatureInfo,
            outputByteCount: 32
        )
    }

    /// u88(counter) || last
    static func chunkNonce(_ counter: UInt64, last: Bool) -> AES.GCM.Nonce {
        var n = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { n[3 + i] = UInt8(truncatingIfNeeded: counter >> (8 * (7 - UInt64(i)))) }
        n[11] = last ? 1 : 0
        return try! AES.GCM.Nonce(data: n)
    }

    static let zeroNonce = try! AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 12))
}
