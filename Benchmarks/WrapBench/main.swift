import CountersignCrypto
import Crypto
import Foundation
import Synchronization

// Times one recipient wrap (HPKE seal of a file key) and unwrap (HPKE open), beside the bare P-256
// ECDH they cannot be faster than, measured in the same run. Run in release mode:
//   swift run -c release countersign-bench [iterations]
//   swift run -c release countersign-bench argon2 [hashes]     Argon2id (OWASP): libsodium vs libargon2, all cores
//   swift run -c release countersign-bench argon2-all [seconds]   libsodium on all cores only
//   swift run -c release countersign-bench envelope [opens]    open a 1 KiB message envelope
let cores = ProcessInfo.processInfo.activeProcessorCount

/// libsodium's Argon2id on every core at once for about `seconds`: the raw rate the server's sign-ins are
/// held to. A fixed time rather than a fixed count, so that a short run's noise does not decide the ratio.
func allCoreRate(seconds limit: Double) -> Double {
    let password = Array("correct horse battery staple".utf8)
    let start = ContinuousClock.now
    let deadline = start + .milliseconds(Int(limit * 1000))
    let done = Mutex(0)
    DispatchQueue.concurrentPerform(iterations: cores) { _ in
        while ContinuousClock.now < deadline {
            _ = try? PasswordHasher.owasp.hash(password)
            done.withLock { $0 += 1 }
        }
    }
    let elapsed = ContinuousClock.now - start
    return Double(done.withLock { $0 })
        / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

if CommandLine.arguments.dropFirst().first == "argon2-all" {
    // Only the all-core rate, for bench-signin.sh to measure again after the HTTP run.
    let limit = CommandLine.arguments.dropFirst(2).first.flatMap(Double.init) ?? 3
    print(
        String(
            format: "argon2id libsodium on all %d cores: %.1f hashes/s (%.0f s)",
            cores,
            allCoreRate(seconds: limit),
            limit
        )
    )
    exit(0)
}
if CommandLine.arguments.dropFirst().first == "argon2" {
    // One core: libsodium (in use) and libargon2 (the reference), interleaved so that the host's load
    // falls on both. Then libsodium on every core at once: the raw rate the server's sign-ins are held to.
    let count = CommandLine.arguments.dropFirst(2).first.flatMap(Int.init) ?? 30
    let password = Array("correct horse battery staple".utf8)
    func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
    var spent: [PasswordHasher.Implementation: Duration] = [:]
    for implementation in PasswordHasher.Implementation.allCases {
        _ = try PasswordHasher.owasp.hash(password, implementation: implementation)
    }
    for _ in 0..<count {
        for implementation in PasswordHasher.Implementation.allCases {
            let start = ContinuousClock.now
            _ = try PasswordHasher.owasp.hash(password, implementation: implementation)
            spent[implementation, default: .zero] += ContinuousClock.now - start
        }
    }
    let sodium = seconds(spent[.libsodium]!) * 1e3 / Double(count)
    let reference = seconds(spent[.reference]!) * 1e3 / Double(count)
    print(
        String(
            format:
                "argon2id m=19456 KiB t=2 p=1, one core: libsodium %.1f ms/hash = %.1f hashes/s; libargon2 %.1f ms/hash = %.1f hashes/s; libsodium is %.2fx faster (%d hashes each)",
            sodium,
            1000 / sodium,
            reference,
            1000 / reference,
            reference / sodium,
            count
        )
    )
    print(String(format: "argon2id libsodium on all %d cores: %.1f hashes/s (%d s)", cores, allCoreRate(seconds: 3), 3))
    exit(0)
}
if CommandLine.arguments.dropFirst().first == "envelope" {
    // What `countersign read` does to a 1 KiB text once it has the envelope: parse, verify, decrypt.
    let count = CommandLine.arguments.dropFirst(2).first.flatMap(Int.init) ?? 2000
    let sender = Identity.generate()
    let reader = Identity.generate()
    let text = [UInt8](repeating: 0x61, count: 1024)
    let sealed = try MessageEnvelope.seal(
        text,
        from: sender,
        to: [reader.publicKey, sender.publicKey],
        created: Date()
    ).bytes
    func openOnce() throws {
        let opened = try MessageEnvelope(bytes: sealed).open(with: reader, from: sender.publicKey)
        precondition(opened.plaintext == text, "the envelope did not open to its text")
    }
    for _ in 0..<100 { try openOnce() }
    let start = ContinuousClock.now
    for _ in 0..<count { try openOnce() }
    let elapsed = ContinuousClock.now - start
    let ms = (Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15) / Double(count)
    print(String(format: "open a 1 KiB message (parse, verify, decrypt): %.3f ms (%d opens)", ms, count))
    exit(0)
}
let iterations = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 5000
var rng = SystemRandomNumberGenerator()
let identity = Identity.generate()
let recipient = identity.publicKey
let fileKey = rng.bytes(32)

func time(_ label: String, _ body: () throws -> Void) rethrows -> Double {
    for _ in 0..<200 { try body() }  // warm up
    let start = ContinuousClock.now
    for _ in 0..<iterations { try body() }
    let elapsed = ContinuousClock.now - start
    let micros = Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12
    return micros / Double(iterations)
}

var stanza = try recipient.wrap(fileKey: fileKey, using: &rng)
let wrap = try time("wrap") { stanza = try recipient.wrap(fileKey: fileKey, using: &rng) }
var opened: [UInt8]? = nil
let unwrap = time("unwrap") { opened = identity.unwrap(stanza) }
precondition(opened == fileKey, "unwrap did not return the file key")

let peerKey = P256.KeyAgreement.PrivateKey()
let peerPub = P256.KeyAgreement.PrivateKey().publicKey
let ecdh = try time("ecdh") { _ = try peerKey.sharedSecretFromKeyAgreement(with: peerPub) }
let encPoint = Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
let parseEcdh = try time("parse+ecdh") {
    _ = try peerKey.sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(x963Representation: encPoint))
}
let keygenEcdh = try time("keygen+ecdh") {
    _ = try P256.KeyAgreement.PrivateKey().sharedSecretFromKeyAgreement(with: peerPub)
}

print(
    String(
        format: "wrap   (HPKE seal, 1 recipient): %7.1f µs   goal <= 100 µs   %.2fx a bare keygen+ECDH (%.1f µs)",
        wrap,
        wrap / keygenEcdh,
        keygenEcdh
    )
)
print(
    String(
        format:
            "unwrap (HPKE open, 1 recipient): %7.1f µs   goal <=  40 µs   %.2fx a bare ECDH (%.1f µs), %.2fx parsing enc + ECDH (%.1f µs)",
        unwrap,
        unwrap / ecdh,
        ecdh,
        unwrap / parseEcdh,
        parseEcdh
    )
)
