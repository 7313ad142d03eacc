import CountersignVectors
import Foundation
import Testing

@testable import CountersignCrypto

/// The stored vectors against the generator (scripts/vectors/). `bash scripts/regenerate-vectors.sh`
/// rewrites them; these tests fail until the files and the generator agree.
@Suite struct VectorTests {
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
        let files = Dictionary(
            uniqueKeysWithValues: try Fixtures.urls(withExtension: "txt").map {
                ($0.deletingPathExtension().lastPathComponent, $0)
            }
        )
        let generated = try VectorGenerator.everything()
        #expect(
            Set(generated.map(\.name)) == Set(files.keys),
            "every stored vector comes from the generator, and the reverse"
        )
        for v in generated where !v.name.hasPrefix("countersign_signed") {
            guard let url = files[v.name] else {
                Issue.record("missing vector file \(v.name).txt")
                continue
            }
            let stored = try TestVector(parsing: String(contentsOf: url, encoding: .utf8), name: v.name)
            #expect(
                stored.reproducible(masking: v.unreproducible) == v.reproducible(masking: v.unreproducible),
                "\(v.name) is not reproduced by the generator"
            )
            #expect(stored.expect == v.expect)
        }
    }
}
