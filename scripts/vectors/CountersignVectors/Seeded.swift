import CountersignCrypto

/// Identities and sealed bytes from fixed seeds, through the package-only seeded APIs: reproducible on
/// purpose, so never for anything but vectors.
package enum Seeded {
    package static func identity(_ seed: String) -> Identity {
        var rng = SeededRandom(seed: seed)
        return Identity.generate(using: &rng)
    }

    package static func seal(_ plaintext: [UInt8], to recipients: [Identity], signer: Identity? = nil, name: String? = nil,
                             seed: String) throws -> [UInt8] {
        var rng = SeededRandom(seed: seed)
        let sink = MemorySink()
        // Short reads, as from a pipe: the output must not depend on how the input arrives.
        try SealedFile.seal(from: MemorySource(plaintext, maxRead: 7_777), to: sink, recipients: recipients.map(\.publicKey),
                            signer: signer, fileName: name, using: &rng)
        return sink.bytes
    }

    /// Re-signs altered envelope bytes as `signer`, so a vector reaches the checks after the signature.
    package static func resign(_ bytes: [UInt8], as signer: Identity) throws -> [UInt8] {
        let e = try MessageEnvelope(bytes: bytes)
        let sig = Array(try signer.signingKey.signature(for: e.signedMessage).rawRepresentation)
        return Array(bytes.dropLast(64)) + P256LowS.normalize(sig)
    }
}
