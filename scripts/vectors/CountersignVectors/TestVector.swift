import Crypto
import CountersignCrypto
import Foundation

/// One scenario file under Tests/CountersignCryptoTests/Vectors/ (docs/SPEC.md §12).
package struct TestVector {
    package var name: String
    package var expect: String
    package var identity: Identity
    package var from: PublicKey?
    package var payloadSHA256: String?
    package var comment: String
    package var bytes: [UInt8]
    /// Bytes that differ from run to run (ECDSA signatures draw their nonce inside swift-crypto); not in the file.
    package var unreproducible: Range<Int>? = nil

    package init(name: String, expect: String, identity: Identity, from: PublicKey? = nil, payload: [UInt8]? = nil,
         comment: String, bytes: [UInt8], unreproducible: Range<Int>? = nil) {
        self.name = name; self.expect = expect; self.identity = identity; self.from = from
        self.payloadSHA256 = payload.map { Hex.encode(SHA256.hash(data: $0)) }
        self.comment = comment; self.bytes = bytes; self.unreproducible = unreproducible
    }

    /// `bytes` with the unreproducible range zeroed, for comparing a stored vector with a generated one.
    package func reproducible(masking range: Range<Int>?) -> [UInt8] {
        guard let range else { return bytes }
        var b = bytes
        for i in range where i < b.count { b[i] = 0 }
        return b
    }

    package init(parsing text: String, name: String) throws {
        let parts = text.components(separatedBy: "\n\n")
        var fields: [String: String] = [:]
        for line in parts[0].split(separator: "\n") {
            let kv = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            fields[kv[0]] = kv[1]
        }
        self.name = name
        expect = fields["expect"]!
        let pem = String(decoding: Data(base64Encoded: fields["identity"]!)!, as: UTF8.self)
        identity = try Identity(pem: pem) { [] }
        from = try fields["from"].map { try PublicKey(spki: Array(Data(base64Encoded: $0)!)) }
        payloadSHA256 = fields["payload"]
        comment = fields["comment"] ?? ""
        bytes = Hex.decode(parts[1].replacingOccurrences(of: "\n", with: ""))!
    }

    /// The file's contents.
    package var text: String {
        var rng = SeededRandom(seed: "pem")
        var out = "expect: \(expect)\n"
        out += "identity: \(Data(try! identity.pem(passphrase: nil, using: &rng).utf8).base64EncodedString())\n"
        if let from { out += "from: \(Data(from.spkiDER).base64EncodedString())\n" }
        if let payloadSHA256 { out += "payload: \(payloadSHA256)\n" }
        out += "comment: \(comment)\n\n"
        let hex = Hex.encode(bytes)
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 128, limitedBy: hex.endIndex) ?? hex.endIndex
            out += hex[i..<j] + "\n"
            i = j
        }
        return out
    }

    /// Opens the bytes as a user would and returns the `expect:` class of the outcome.
    package func run() -> String {
        if name.hasPrefix("message_") { return runMessage() }
        do {
            let plaintext: [UInt8]
            switch SealedFormat.detect(Array(bytes.prefix(SealedFormat.detectionLength))) {
            case .countersign?:
                let sink = MemorySink()
                try SealedFile.openReleasingChunksBeforeVerification(from: MemorySource(bytes), to: sink, identity: identity, expectedSender: from)
                plaintext = sink.bytes
            case .filelock?:
                plaintext = try FileLockPackage.open(bytes, with: identity)
            case nil:
                throw SealError.unknownFormat
            }
            return Hex.encode(SHA256.hash(data: plaintext)) == payloadSHA256 ? "success" : "wrong plaintext"
        } catch let e as SealError {
            switch e {
            case .unknownFormat: return "unknown format"
            case .unknownVersion: return "unknown version"
            case .header: return "header"
            case .notForThisKey: return "not for this key"
            case .tampered: return "tampered"
            case .truncated: return "truncated"
            case .signatureMissing: return "signature missing"
            case .badSignature: return "bad signature"
            case .malformed: return "malformed"
            case .tooLarge: return "too large"
            case .invalidArgument: return "invalid argument"
            }
        } catch {
            return "unexpected \(error)"
        }
    }

    /// Message envelopes (docs/SPEC.md §8.4): parsed from bytes, opened by `identity`, expecting `from`.
    package func runMessage() -> String {
        guard let from else { return "vector without from:" }
        do {
            let opened = try MessageEnvelope(bytes: bytes).open(with: identity, from: from)
            return Hex.encode(SHA256.hash(data: opened.plaintext)) == payloadSHA256 ? "success" : "wrong plaintext"
        } catch let e as MessageError {
            switch e {
            case .unknownFormat: return "unknown format"
            case .unknownVersion: return "unknown version"
            case .malformed: return "malformed"
            case .tooLarge: return "too large"
            case .badSignature: return "bad signature"
            case .notForThisKey: return "not for this key"
            case .tampered: return "tampered"
            case .invalidArgument: return "invalid argument"
            }
        } catch {
            return "unexpected \(error)"
        }
    }
}
