import CountersignTestSupport
import Foundation
import Testing

/// What an application outside this package can call in CountersignCrypto: the seeded forms (a replayed
/// generator reuses keys and nonces) must not compile, the safe ones must. Type-checks small clients
/// against the modules of this build with `swiftc`, as a dependent package would see them.
@Suite struct LibraryAPITests {
    /// `<scratch>/debug/Modules`, beside the countersign binary under test.
    static let modules = URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().appendingPathComponent("Modules")
        .path

    static func typecheck(_ t: CLI, _ body: String) throws -> CLI.Output {
        try t.write("client.swift", Data("import CountersignCrypto\nimport Foundation\n\(body)\n".utf8))
        let build = URL(fileURLWithPath: modules).deletingLastPathComponent()
        let maps =
            try FileManager.default.contentsOfDirectory(atPath: build.path)
            .filter { $0.hasSuffix(".build") }
            .map { build.appendingPathComponent($0).appendingPathComponent("module.modulemap").path }
            .filter { FileManager.default.fileExists(atPath: $0) }
            + ["CArgon2", "CSodium"].map {
                CLI.packageRoot.appendingPathComponent("Sources/\($0)/module.modulemap").path
            }
        return try t.run(
            "swiftc",
            ["-typecheck", "client.swift", "-I", modules] + maps.flatMap { ["-Xcc", "-fmodule-map-file=\($0)"] }
        )
    }

    @Test func seededFormsAreNotPublicAndOpenSaysWhatItReleases() throws {
        let t = try CLI()
        try #require(
            FileManager.default.fileExists(atPath: Self.modules + "/CountersignCrypto.swiftmodule"),
            "built modules at \(Self.modules)"
        )
        let setup = "let id = Identity.generate()\nvar rng = SystemRandomNumberGenerator()\n"
        let safe = try Self.typecheck(
            t,
            setup + """
                _ = try FileLockPackage.seal([1], to: id.publicKey)
                try SealedFile.seal(from: MemorySource([1]), to: MemorySink(), recipients: [id.publicKey])
                _ = try SealedFile.verify(from: MemorySource([]), identity: id)
                _ = try SealedFile.openReleasingChunksBeforeVerification(from: MemorySource([]), to: MemorySink(), identity: id)
                _ = try MessageEnvelope.seal([1], from: id, to: [id.publicKey], created: Date())
                _ = rng.bytes(4)
                """
        )
        #expect(safe.status == 0, "the safe API compiles for an application: \(safe.stderr)")
        let refused: [(String, String)] = [
            ("var seeded = SeededRandom(seed: \"x\")", "cannot find 'SeededRandom' in scope"),
            ("_ = try FileLockPackage.seal([1], to: id.publicKey, using: &rng)", "using"),
            (
                "try SealedFile.seal(from: MemorySource([1]), to: MemorySink(), recipients: [id.publicKey], using: &rng)",
                "using"
            ),
            (
                "_ = try MessageEnvelope.seal([1], from: id, to: [id.publicKey], created: UInt64(0), using: &rng)",
                "using"
            ),
            ("_ = Identity.generate(using: &rng)", "using"),
            ("_ = try id.publicKey.wrap(fileKey: [UInt8](repeating: 0, count: 32), using: &rng)", "wrap"),
            ("_ = try SealedFile.open(from: MemorySource([]), to: MemorySink(), identity: id)", "open"),
        ]
        for (line, mention) in refused {
            let r = try Self.typecheck(t, setup + line)
            #expect(r.status != 0, "an application can call: \(line)")
            #expect(r.stderr.contains("error:") && r.stderr.contains(mention), "\(line): \(r.stderr)")
        }
    }
}
