import CountersignVectors
import Foundation

// Rewrites the test vectors (docs/SPEC.md §12) from their fixed seeds:
//   swift run countersign-vectors [DIR]      (default Tests/CountersignCryptoTests/Vectors)
// scripts/regenerate-vectors.sh runs it from the package root. The tests then check that every stored
// unsigned vector is reproduced byte for byte and that each file gives its expected class.
let arguments = CommandLine.arguments.dropFirst()
guard arguments.count <= 1, arguments.first?.hasPrefix("-") != true else {
    FileHandle.standardError.write(
        Data("usage: countersign-vectors [DIR]   (default Tests/CountersignCryptoTests/Vectors)\n".utf8)
    )
    exit(2)
}
let dir = URL(fileURLWithPath: arguments.first ?? "Tests/CountersignCryptoTests/Vectors")
var isDirectory: ObjCBool = false
guard FileManager.default.fileExists(atPath: dir.path, isDirectory: &isDirectory), isDirectory.boolValue else {
    FileHandle.standardError.write(
        Data(
            "countersign-vectors: \(dir.path) is not a directory; run it from the package root or name the Vectors directory\n"
                .utf8
        )
    )
    exit(1)
}
do {
    let vectors = try VectorGenerator.everything()
    // A generator change that breaks a scenario must not be written as the new truth.
    for v in vectors where v.run() != v.expect {
        FileHandle.standardError.write(
            Data("countersign-vectors: \(v.name) gives \(v.run()), not \(v.expect); nothing was written\n".utf8)
        )
        exit(1)
    }
    for v in vectors {
        try v.text.write(to: dir.appendingPathComponent(v.name + ".txt"), atomically: true, encoding: .utf8)
    }
    try PinVectorGenerator.json().write(
        to: dir.appendingPathComponent("key_pins.json"),
        atomically: true,
        encoding: .utf8
    )
    print("wrote \(vectors.count) vectors and key_pins.json to \(dir.path)")
} catch {
    FileHandle.standardError.write(Data("countersign-vectors: \(error)\n".utf8))
    exit(1)
}
