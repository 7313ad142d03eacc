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
    init(hex: String) {
        let chars = Array(hex.utf8)
        self = stride(from: 0, to: chars.count - 1, by: 2).map { i in
            UInt8(String(decoding: chars[i...i + 1], as: UTF8.self), radix: 16)!
        }
    }

    var hex: String { map { String(format: "%02x", $0) }.joined() }
}
