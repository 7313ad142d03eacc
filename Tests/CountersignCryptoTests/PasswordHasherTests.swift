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
        ] {
            #expect(throws: PasswordHasher.Failure.self, "\(bad)") {
                try PasswordHasher.verify(Array("pw".utf8), against: bad)
            }
        }
    }
}
