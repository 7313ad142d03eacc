import Foundation
import Testing
@testable import CountersignCrypto

@Suite struct VectorTests {
    /// REGENERATE_VECTORS=1 swift test --filter VectorTests  rewrites Vectors/*.txt from the generator.
    @Test func regenerateWhenAsked() throws {
        guard ProcessInfo.processInfo.environment["REGENERATE_VECTORS"] == "1" else { return }
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors")
        for v in try VectorGenerator.all() + MessageVectorGenerator.all() {
            try v.text.write(to: dir.appendingPathComponent(v.name + ".txt"), atomically: true, encoding: .utf8)
        }
    }

    @Test func everyVectorFileGivesItsExpectedClass() throws {
        let files = try Fixtures.urls(withExtension: "txt")
        #expect(files.count >= 55)
        for url in files {
            let name = url.deletingPathExtension().lastPathComponent
            let v = try TestVector(parsing: String(contentsOf: url, encoding: .utf8), name: name)
            #expect(v.run() == v.expect, "\(name): \(v.comment)")
        }
    }

    @Test func unsignedVectorsAreReproducedByteForByte() throws {
        let files = Dictionary(uniqueKeysWithValues: try Fixtures.urls(withExtension: "txt").map {
            ($0.deletingPathExtension().lastPathComponent, $0)
        })
        for v in try VectorGenerator.all() + MessageVectorGenerator.all() where !v.name.hasPrefix("countersign_signed") {
            guard let url = files[v.name] else { Issue.record("missing vector file \(v.name).txt"); continue }
            let stored = try TestVector(parsing: String(contentsOf: url, encoding: .utf8), name: v.name)
            #expect(stored.reproducible(masking: v.unreproducible) == v.reproducible(masking: v.unreproducible),
                    "\(v.name) is not reproduced by the generator")
            #expect(stored.expect == v.expect)
        }
    }
}
