import CountersignCrypto

/// Message envelopes (docs/SPEC.md §8) in bytes and in armor.
enum FuzzMessages {
    /// Parsed, then opened with the vectors' identity from their sender (the seeds open).
    static func envelope(_ data: [UInt8]) {
        guard let envelope = try? MessageEnvelope(bytes: data) else { return }
        _ = envelope.recipients
        _ = try? envelope.open(with: FuzzKeys.vectorIdentity, from: FuzzKeys.vectorSender)
        _ = try? envelope.verifySignature(from: FuzzKeys.vectorSender)
    }

    /// The parser takes only the canonical encoding: what parses is its own encoding, byte for byte, and
    /// reads back from its armor.
    static func envelopeRoundtrip(_ data: [UInt8]) {
        guard let envelope = try? MessageEnvelope(bytes: data) else { return }
        guard envelope.bytes == data else { finding("an envelope parsed from bytes that are not its encoding") }
        guard (try? MessageEnvelope(bytes: envelope.bytes)) == envelope else {
            finding("an envelope does not parse again from its encoding")
        }
        guard (try? MessageEnvelope(armored: envelope.armored)) == envelope else {
            finding("an envelope does not parse again from its armor")
        }
    }

    /// What parses from armor armors again to the same text, less the whitespace around it.
    static func armor(_ data: [UInt8]) {
        guard let envelope = try? MessageEnvelope(armored: FuzzKeys.text(data)) else { return }
        let armored = envelope.armored
        guard (try? MessageEnvelope(armored: armored)) == envelope else {
            finding("an armored envelope does not parse again from its armor")
        }
        let space: Set<UInt8> = [0x20, 0x09, 0x0D, 0x0A]
        var trimmed = data[...]
        while let b = trimmed.first, space.contains(b) { trimmed.removeFirst() }
        while let b = trimmed.last, space.contains(b) { trimmed.removeLast() }
        guard Array(trimmed) + [0x0A] == Array(armored.utf8) else {
            finding("armor that is not the canonical armor parsed")
        }
    }
}
