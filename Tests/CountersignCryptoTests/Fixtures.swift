import CountersignCrypto
import Foundation

/// Files under `Vectors/`, copied into the test bundle.
enum Fixtures {
    static let root = Bundle.module.url(forResource: "Vectors", withExtension: nil)!

    static func text(_ name: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)
    }

    static func urls(withExtension ext: String) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == ext }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }
}

extension Array where Element == UInt8 {
    init(hex: String) { self = Hex.decode(hex)! }

    var hex: String { Hex.encode(self) }
}
