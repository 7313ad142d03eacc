import CountersignTestSupport
import Crypto
import Foundation
import Testing

@testable import CountersignCrypto

/// docs/SPEC.md §9: the safety number of two accounts, Signal's numeric fingerprint over each account's
/// sorted device signing keys. Vectors/safety_number.json holds the worked vector and libsignal's own.
@Suite struct SafetyNumberTests {
    struct File: Decodable {
        let iterations: Int
        let vector: Vector
        let libsignal: Signal
    }
    struct Vector: Decodable {
        let local: Account, remote: Account
        let safety_number: String, display: String
    }
    struct Account: Decodable {
        let username: String
        let private_scalars: [UInt8]
        let signing_keys_spki: [String]
        let key_bytes: String
        let digits: String
        var keys: [PublicKey] { get throws { try signing_keys_spki.map { try PublicKey(spki: [UInt8](hex: $0)) } } }
    }
    struct Signal: Decodable {
        struct Side: Decodable { let identifier: String, key_bytes: String }
        let local: Side, remote: Side
        let safety_number: String
    }

    let file: File = try! JSONDecoder().decode(
        File.self,
        from: Data(contentsOf: Fixtures.root.appendingPathComponent("safety_number.json"))
    )

    /// Fresh keys from a seeded generator, so every run tests the same numbers.
    static func keys(_ n: Int, seed: String) -> [PublicKey] {
        var rng = SeededRandom(seed: "safety number " + seed)
        return (0..<n).map { _ in Identity.generate(using: &rng).publicKey }
    }

    @Test func vectorFileReproduces() throws {
        #expect(file.iterations == SafetyNumber.iterations)
        let v = file.vector
        for account in [v.local, v.remote] {
            // The listed keys are those of the stated private scalars.
            let derived = try account.private_scalars.map { d in
                try PublicKey(
                    point: Array(
                        P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0, count: 31) + [d])
                            .publicKey.x963Representation
                    )
                )
            }
            #expect(try derived == account.keys)
            #expect(try SafetyNumber.keyBytes(account.keys).hex == account.key_bytes)
            #expect(
                try SafetyNumber.accountDigits(username: account.username, signingKeys: account.keys) == account.digits
            )
        }
        let number = try SafetyNumber.compute(
            localUsername: v.local.username,
            localSigningKeys: v.local.keys,
            remoteUsername: v.remote.username,
            remoteSigningKeys: v.remote.keys
        )
        #expect(number == v.safety_number)
        #expect(SafetyNumber.display(number) == v.display)
    }

    @Test func hashAndDigitsAreSignals() {
        // libsignal's DISPLAYABLE_FINGERPRINT_V1, with its 33-byte identity keys in place of our key bytes.
        let s = file.libsignal
        let half = { (side: Signal.Side) in
            SafetyNumber.digits(
                of: SafetyNumber.fingerprint(
                    keyBytes: [UInt8](hex: side.key_bytes),
                    identifier: Array(side.identifier.utf8)
                )
            )
        }
        #expect(SafetyNumber.combine(half(s.local), half(s.remote)) == s.safety_number)
        #expect(SafetyNumber.combine(half(s.remote), half(s.local)) == s.safety_number)
    }

    @Test func sameOnBothSides() throws {
        let a = Self.keys(3, seed: "a")
        let b = Self.keys(2, seed: "b")
        let ab = try SafetyNumber.compute(
            localUsername: "alice",
            localSigningKeys: a,
            remoteUsername: "bob",
            remoteSigningKeys: b
        )
        let ba = try SafetyNumber.compute(
            localUsername: "bob",
            localSigningKeys: b,
            remoteUsername: "alice",
            remoteSigningKeys: a
        )
        #expect(ab == ba)
        // Each half is one account's 30 digits, the smaller first.
        let da = try SafetyNumber.accountDigits(username: "alice", signingKeys: a)
        let db = try SafetyNumber.accountDigits(username: "bob", signingKeys: b)
        #expect(ab == min(da, db) + max(da, db))
    }

    @Test func sixtyDecimalDigits() throws {
        for i in 0..<8 {
            let n = try SafetyNumber.compute(
                localUsername: "u\(i)",
                localSigningKeys: Self.keys(1 + i % 3, seed: "x\(i)"),
                remoteUsername: "v\(i)",
                remoteSigningKeys: Self.keys(1 + i % 2, seed: "y\(i)")
            )
            #expect(n.count == 60)
            #expect(n.utf8.allSatisfy { (0x30...0x39).contains($0) })
            let shown = SafetyNumber.display(n)
            #expect(
                shown.split(separator: " ", omittingEmptySubsequences: false).map(\.count)
                    == Array(repeating: 5, count: 12)
            )
            #expect(shown.replacingOccurrences(of: " ", with: "") == n)
        }
    }

    @Test func displayGroupsByFive() {
        #expect(SafetyNumber.display("") == "")
        #expect(SafetyNumber.display("12345") == "12345")
        #expect(SafetyNumber.display("1234567") == "12345 67")
        #expect(
            SafetyNumber.display(String(repeating: "0123456789", count: 6))
                == "01234 56789 01234 56789 01234 56789 01234 56789 01234 56789 01234 56789"
        )
    }

    @Test func orderOfAnAccountsKeysDoesNotMatter() throws {
        let a = Self.keys(4, seed: "order")
        let b = Self.keys(1, seed: "other")
        let base = try SafetyNumber.compute(
            localUsername: "alice",
            localSigningKeys: a,
            remoteUsername: "bob",
            remoteSigningKeys: b
        )
        for permutation in [a.reversed(), [a[2], a[0], a[3], a[1]], [a[1], a[0], a[2], a[3]]] {
            #expect(
                try SafetyNumber.compute(
                    localUsername: "alice",
                    localSigningKeys: Array(permutation),
                    remoteUsername: "bob",
                    remoteSigningKeys: b
                ) == base
            )
        }
        // A key listed twice is one key; a key given as a compressed point is the same key.
        #expect(
            try SafetyNumber.compute(
                localUsername: "alice",
                localSigningKeys: a + [a[0]],
                remoteUsername: "bob",
                remoteSigningKeys: b
            ) == base
        )
        let compressed = try PublicKey(
            point: Array(P256.KeyAgreement.PublicKey(x963Representation: b[0].point).compressedRepresentation)
        )
        #expect(
            try SafetyNumber.compute(
                localUsername: "alice",
                localSigningKeys: a,
                remoteUsername: "bob",
                remoteSigningKeys: [compressed]
            ) == base
        )
    }

    @Test func everyKeyChangeChangesTheNumber() throws {
        let a = Self.keys(3, seed: "change a")
        let b = Self.keys(2, seed: "change b")
        let extra = Self.keys(2, seed: "change extra")
        func number(_ a: [PublicKey], _ b: [PublicKey]) throws -> String {
            try SafetyNumber.compute(
                localUsername: "alice",
                localSigningKeys: a,
                remoteUsername: "bob",
                remoteSigningKeys: b
            )
        }
        let base = try number(a, b)
        var variants: [String: String] = [:]
        variants["alice adds a device"] = try number(a + [extra[0]], b)
        variants["bob adds a device"] = try number(a, b + [extra[0]])
        variants["alice removes a device"] = try number(Array(a.dropLast()), b)
        variants["bob removes a device"] = try number(a, Array(b.dropFirst()))
        variants["alice rotates a key"] = try number([a[0], extra[1], a[2]], b)
        variants["bob rotates a key"] = try number(a, [b[0], extra[1]])
        variants["a device moves from bob to alice"] = try number(a + [b[1]], [b[0]])
        for (what, n) in variants {
            #expect(n != base, "\(what)")
        }
        #expect(Set(variants.values).count == variants.count, "every variant gives its own number")
        // Only the changed account's half changes.
        let bobHalf = try SafetyNumber.accountDigits(username: "bob", signingKeys: b)
        #expect(variants["alice adds a device"]!.contains(bobHalf) && base.contains(bobHalf))
    }

    @Test func usernameIsPartOfTheNumber() throws {
        let a = Self.keys(2, seed: "name a")
        let b = Self.keys(1, seed: "name b")
        let base = try SafetyNumber.compute(
            localUsername: "alice",
            localSigningKeys: a,
            remoteUsername: "bob",
            remoteSigningKeys: b
        )
        for (l, r) in [("alicf", "bob"), ("alice", "bob2"), ("bob", "alice"), ("Alice", "bob")] {
            #expect(
                try SafetyNumber.compute(localUsername: l, localSigningKeys: a, remoteUsername: r, remoteSigningKeys: b)
                    != base,
                "\(l) / \(r)"
            )
        }
    }

    @Test func anAccountWithoutKeysIsRefused() {
        let keys = Self.keys(1, seed: "empty")
        #expect(throws: SafetyNumberError.noSigningKeys(username: "bob")) {
            try SafetyNumber.compute(
                localUsername: "alice",
                localSigningKeys: keys,
                remoteUsername: "bob",
                remoteSigningKeys: []
            )
        }
        #expect(throws: SafetyNumberError.noSigningKeys(username: "alice")) {
            try SafetyNumber.compute(
                localUsername: "alice",
                localSigningKeys: [],
                remoteUsername: "bob",
                remoteSigningKeys: keys
            )
        }
        #expect(throws: SafetyNumberError.self) {
            try SafetyNumber.compute(
                localUsername: "alice",
                localSigningKeys: [],
                remoteUsername: "bob",
                remoteSigningKeys: []
            )
        }
        #expect(
            SafetyNumberError.noSigningKeys(username: "bob").description.contains("\"bob\" has no active device key")
        )
    }

    /// An independent implementation with Python's hashlib, from the same SPKI bytes (it sorts, frames and
    /// hashes on its own). It must also give libsignal's vector, so it is Signal's algorithm.
    static let reference = """
        import hashlib, json, sys

        def fingerprint(key, ident):
            h = b"\\x00\\x00" + key + ident
            for _ in range(5200):
                h = hashlib.sha512(h + key).digest()
            return h

        def half(side):
            if "raw" in side:
                key = bytes.fromhex(side["raw"])
            else:
                spkis = sorted(set(bytes.fromhex(s) for s in side["spki"]))
                key = b"".join(len(s).to_bytes(2, "big") + s for s in spkis)
            f = fingerprint(key, side["username"].encode("utf-8"))
            return "".join("%05d" % (int.from_bytes(f[i:i + 5], "big") % 100000) for i in range(0, 30, 5))

        for case in json.load(sys.stdin):
            a, b = half(case[0]), half(case[1])
            print(a + b if a < b else b + a)
        """

    static func python(_ script: String, stdin: Data) throws -> String {
        let r = try Spawned.run("/usr/bin/env", ["python3", "-c", script], stdin: stdin)
        guard r.status == 0 else {
            throw KeyError.malformedKey("python3 failed: \(String(decoding: r.stderr, as: UTF8.self))")
        }
        return String(decoding: r.stdout, as: UTF8.self)
    }

    @Test func pythonHashlibAgrees() throws {
        var rng = SeededRandom(seed: "safety number python")
        var cases: [(String, [PublicKey], String, [PublicKey])] = []
        let names = ["alice", "bob", "carol.d", "x_y-z", "zoë", "日本", "a", String(repeating: "m", count: 32)]
        for i in 0..<12 {
            let a = (0..<(1 + i % 4)).map { _ in Identity.generate(using: &rng).publicKey }
            let b = (0..<(1 + (i / 4) % 3)).map { _ in Identity.generate(using: &rng).publicKey }
            cases.append((names[i % names.count], a, names[(i + 3) % names.count], b))
        }
        let same = Self.keys(2, seed: "same")
        cases.append(("alice", same, "alice", same))  // an account against itself
        cases.append(("alice", same + [same[1]], "bob", [same[0]]))  // a duplicate key, a shared key
        let v = file.vector
        cases.append((v.local.username, try v.local.keys, v.remote.username, try v.remote.keys))

        func side(_ name: String, _ keys: [PublicKey]) -> [String: Any] {
            ["username": name, "spki": keys.map { $0.spkiDER.hex }]
        }
        var json: [[[String: Any]]] = cases.map { [side($0.0, $0.1), side($0.2, $0.3)] }
        let s = file.libsignal
        json.append([
            ["username": s.local.identifier, "raw": s.local.key_bytes],
            ["username": s.remote.identifier, "raw": s.remote.key_bytes],
        ])

        let lines = try Self.python(Self.reference, stdin: JSONSerialization.data(withJSONObject: json)).split(
            separator: "\n"
        ).map(String.init)
        #expect(lines.count == cases.count + 1)
        guard lines.count == cases.count + 1 else { return }
        for (i, c) in cases.enumerated() {
            let ours = try SafetyNumber.compute(
                localUsername: c.0,
                localSigningKeys: c.1,
                remoteUsername: c.2,
                remoteSigningKeys: c.3
            )
            #expect(ours == lines[i], "case \(i): \(c.0) with \(c.1.count) keys, \(c.2) with \(c.3.count)")
        }
        #expect(lines[cases.count - 1] == v.safety_number)
        #expect(lines[cases.count] == s.safety_number, "the Python reference is Signal's algorithm")
    }
}
