import CArgon2
import Foundation
import Testing

@testable import CountersignCrypto

@Suite struct PasswordHasherTests {
    @Test func rfc9106Vector() throws {
        var f: [String: String] = [:]
        for line in try Fixtures.text("argon2id_rfc9106.params").split(separator: "\n") where !line.hasPrefix("#") {
            let kv = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            f[kv[0]] = kv[1]
        }
        let tag = try PasswordHasher.rawArgon2id(
            password: [UInt8](hex: f["password"]!),
            salt: [UInt8](hex: f["salt"]!),
            secret: [UInt8](hex: f["secret"]!),
            associatedData: [UInt8](hex: f["associated_data"]!),
            memoryKiB: Int(f["memory_kib"]!)!,
            iterations: Int(f["iterations"]!)!,
            parallelism: Int(f["parallelism"]!)!,
            length: 32
        )
        #expect(tag.hex == f["tag"])
    }

    @Test func phcRoundTripAndWrongPassword() throws {
        var rng = SeededRandom(seed: "argon")
        let hasher = PasswordHasher(memoryKiB: 1024, iterations: 1, parallelism: 1)
        let phc = try hasher.hash(Array("correct horse".utf8), using: &rng)
        #expect(phc.hasPrefix("$argon2id$v=19$m=1024,t=1,p=1$"))
        #expect(phc.split(separator: "$").count == 5)
        #expect(try PasswordHasher.verify(Array("correct horse".utf8), against: phc))
        #expect(try !PasswordHasher.verify(Array("correct horsf".utf8), against: phc))
        #expect(try !PasswordHasher.verify([], against: phc))
        // Same password, different salt: different string.
        #expect(try hasher.hash(Array("correct horse".utf8), using: &rng) != phc)
    }

    /// libsodium (in use) and libargon2 (the reference) give the same tag for the same inputs: passwords
    /// empty, with NUL bytes and long; libsodium's smallest memory; OWASP's parameters.
    @Test func libsodiumAgreesWithTheReference() throws {
        var rng = SeededRandom(seed: "two libraries")
        let passwords: [[UInt8]] = [[], [0, 0x61, 0], Array("correct horse battery staple".utf8), rng.bytes(300)]
        let hashers = [
            PasswordHasher(memoryKiB: 8, iterations: 1, parallelism: 1),
            PasswordHasher(memoryKiB: 1024, iterations: 3, parallelism: 1), PasswordHasher.owasp,
        ]
        for hasher in hashers {
            for password in passwords {
                let salt = rng.bytes(16)
                let ours = try hasher.rawHash(password, salt: salt, implementation: .libsodium)
                #expect(ours == (try hasher.rawHash(password, salt: salt, implementation: .reference)))
                #expect(ours.count == 32)
            }
        }
        // libsodium computes one lane only; it says so rather than computing something else.
        #expect(throws: PasswordHasher.Failure.self) {
            try PasswordHasher(memoryKiB: 1024, iterations: 1, parallelism: 2).rawHash(
                [1],
                salt: rng.bytes(16),
                implementation: .libsodium
            )
        }
    }

    /// Strings made by either library verify with `verify` (libsodium), p > 1 included (stored hashes from
    /// the reference library keep verifying), and a wider hasher's strings are the reference's.
    @Test func stringsOfEitherLibraryVerify() throws {
        var rng = SeededRandom(seed: "either")
        for lanes in [1, 2, 4] {
            let hasher = PasswordHasher(memoryKiB: 256, iterations: 2, parallelism: lanes)
            for implementation in PasswordHasher.Implementation.allCases {
                let phc = try hasher.hash(Array("pw".utf8), using: &rng, implementation: implementation)
                #expect(phc.hasPrefix("$argon2id$v=19$m=256,t=2,p=\(lanes)$"))
                #expect(try PasswordHasher.verify(Array("pw".utf8), against: phc))
                #expect(try !PasswordHasher.verify(Array("pv".utf8), against: phc))
                // The reference's own check agrees.
                #expect(argon2id_verify(phc, Array("pw".utf8), 2) == ARGON2_OK.rawValue)
            }
        }
    }

    @Test func defaultIsOWASP() throws {
        let phc = try PasswordHasher.owasp.hash(Array("pw".utf8))
        #expect(phc.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        #expect(try PasswordHasher.verify(Array("pw".utf8), against: phc))
        #expect(!PasswordHasher.owasp.needsRehash(phc))
    }

    @Test func needsRehashWhenWeaker() throws {
        var rng = SeededRandom(seed: "rehash")
        let weak = try PasswordHasher(memoryKiB: 4096, iterations: 1, parallelism: 1).hash(
            Array("pw".utf8),
            using: &rng
        )
        #expect(PasswordHasher.owasp.needsRehash(weak))
        #expect(PasswordHasher.owasp.needsRehash("$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaA"))
        #expect(PasswordHasher.owasp.needsRehash("not a hash"))
        #expect(!PasswordHasher(memoryKiB: 4096, iterations: 1, parallelism: 1).needsRehash(weak))
    }

    @Test func malformedAndHostileHashesAreRefused() throws {
        for bad in [
            "", "$argon2id$v=19$m=19456,t=2$c2FsdA$aGFzaA", "$argon2id$v=16$m=19456,t=2,p=1$c2FsdA$aGFzaA",
            "$argon2id$v=19$m=019456,t=2,p=1$c2FsdA$aGFzaA", "$argon2d$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
            "$argon2id$v=19$m=4194304,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA",
            // Parameters out of order, repeated, with a trailing comma, or less than 8 KiB a lane.
            "$argon2id$v=19$t=1,m=64,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
            "$argon2id$v=19$m=64,m=64,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
            "$argon2id$v=19$m=64,t=1,p=1,$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
            "$argon2id$v=19$m=8,t=1,p=2$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
            // Salt and hash: padded, another alphabet, non-canonical last bits, too short, too long.
            "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ=$aGFzaGhhc2hoYXNoaGFzaA",
            "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFz_A",
            "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHR$aGFzaGhhc2hoYXNoaGFzaA",
            "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA",
            "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaA",
            "$argon2id$v=19$m=64,t=1,p=1$\(String(repeating: "A", count: 88))$aGFzaGhhc2hoYXNoaGFzaA",
            "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$\(String(repeating: "A", count: 88))",
        ] {
            #expect(throws: PasswordHasher.Failure.self, "\(bad)") {
                try PasswordHasher.verify(Array("pw".utf8), against: bad)
            }
        }
    }
}
