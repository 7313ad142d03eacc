import CountersignTestSupport
import Testing

@testable import CountersignCrypto

@Suite struct CBORTests {
    func decode(_ hex: String) throws(WebAuthnError) -> CBOR { try CBOR(decoding: Hex.decode(hex)!) }

    func refused(_ hex: String, _ why: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let v = try decode(hex)
            Issue.record("\(hex) decoded to \(v)", sourceLocation: sourceLocation)
        } catch {
            #expect("\(error)".contains(why), "\(hex): \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func readsTheSubsetAsRFC8949AppendixASays() throws {
        let cases: [(String, CBOR)] = [
            ("00", .int(0)), ("17", .int(23)), ("1818", .int(24)), ("18ff", .int(255)), ("190100", .int(256)),
            ("1a00010000", .int(65_536)), ("1b0000000100000000", .int(1 << 32)),
            ("1b7fffffffffffffff", .int(Int64.max)), ("20", .int(-1)), ("3863", .int(-100)),
            ("3b7fffffffffffffff", .int(Int64.min)), ("40", .bytes([])), ("4401020304", .bytes([1, 2, 3, 4])),
            ("60", .text("")), ("6449455446", .text("IETF")), ("62c3bc", .text("ü")), ("80", .array([])),
            ("83010203", .array([.int(1), .int(2), .int(3)])), ("f4", .bool(false)), ("f5", .bool(true)), ("f6", .null),
            ("a201020304", TestCBOR.map([(.int(1), .int(2)), (.int(3), .int(4))])),
            ("a26161016162820203", TestCBOR.map([(.text("a"), .int(1)), (.text("b"), .array([.int(2), .int(3)]))])),
        ]
        for (hex, want) in cases {
            #expect(try decode(hex) == want, "\(hex)")
            #expect(TestCBOR.encode(want) == Hex.decode(hex)!, "\(hex)")
        }
    }

    @Test func refusesWhatCouldBeReadTwoWaysOrIsNotInTheSubset() {
        // Not the shortest form.
        for hex in [
            "1817", "190017", "1900ff", "1a0000ffff", "1b00000000ffffffff", "3817", "5801ff", "7801", "9801", "b801",
        ] {
            refused(hex, "shortest form")
        }
        for hex in ["5f4101ff", "7f6161ff", "9f01ff", "bf0101ff"] { refused(hex, "indefinite") }
        for hex in ["1c", "3d", "5e"] { refused(hex, "reserved") }
        for hex in ["c11a514b67b0", "d818456449455446", "c249010000000000000000"] { refused(hex, "tags") }
        for hex in ["f93c00", "fa47c35000", "fb3ff199999999999a"] { refused(hex, "floats") }
        for hex in ["f7", "f0", "f820", "e0"] { refused(hex, "simple value") }
        refused("1bffffffffffffffff", "does not fit")
        refused("3b8000000000000000", "does not fit")
        refused("a201020103", "duplicate key")
        refused("a2616101616102", "duplicate key")
        refused("a1410102", "neither an integer nor text")
        refused("a1800102", "neither an integer nor text")
        refused("a1f401", "neither an integer nor text")
        refused("62c328", "not UTF-8")
        refused("0000", "1 bytes after")
        refused("5bffffffffffffffff", "over the limit")
        refused("5a00010001" + String(repeating: "00", count: 10), "over the limit")
        refused("99010100", "over the limit")
        refused("450102", "past the end")
    }

    @Test func everyTruncationOfAValidItemIsRefused() throws {
        let item = TestCBOR.encode(
            TestCBOR.map([
                (.int(1), .int(2)), (.int(3), .int(-7)), (.int(-1), .int(1)),
                (.int(-2), .bytes(Array(repeating: 7, count: 32))), (.text("fmt"), .text("packed")),
                (.text("x"), .array([.int(1_000_000), .bool(true), .null])),
            ])
        )
        #expect(try CBOR(decoding: item).entries?.count == 6)
        for n in 0..<item.count {
            #expect(throws: WebAuthnError.self) { try CBOR(decoding: Array(item[0..<n])) }
        }
    }

    @Test func depthItemsAndSizeHaveCaps() throws {
        var nested = CBOR.int(0)
        for _ in 0..<(CBOR.maxDepth - 1) { nested = .array([nested]) }
        #expect(try CBOR(decoding: TestCBOR.encode(nested)) == nested)
        #expect(throws: WebAuthnError.malformed("CBOR nested deeper than 8")) {
            try CBOR(decoding: TestCBOR.encode(.array([nested])))
        }
        let many = CBOR.array(Array(repeating: .int(1), count: CBOR.maxItems))
        #expect(try CBOR(decoding: TestCBOR.encode(many)) == many)
        #expect(throws: WebAuthnError.self) {
            try CBOR(decoding: TestCBOR.encode(.array(Array(repeating: .int(1), count: CBOR.maxItems + 1))))
        }
        // A byte string of 256 to 65,535 bytes has a 3-byte head.
        let big = TestCBOR.encode(.bytes(Array(repeating: 1, count: CBOR.maxSize - 3)))
        #expect(big.count == CBOR.maxSize)
        #expect(try CBOR(decoding: big).byteString?.count == CBOR.maxSize - 3)
        #expect(throws: WebAuthnError.malformed("CBOR over 65536 bytes")) {
            try CBOR(decoding: TestCBOR.encode(.bytes(Array(repeating: 1, count: CBOR.maxSize - 2))))
        }
    }

    /// Random values round-trip; random and mutated bytes are read or refused, never a crash. (The
    /// bounded libFuzzer pass of issue 23 goes further; this runs in every test run.)
    @Test func randomInputsAreReadOrRefusedNeverACrash() throws {
        var rng = SplitMix(seed: 0xC0FFEE)
        func value(_ depth: Int) -> CBOR {
            switch Int.random(in: 0..<(depth > 3 ? 5 : 8), using: &rng) {
            case 0:
                return .int(
                    Int64.random(in: Int64.min...Int64.max, using: &rng) >> Int64.random(in: 0..<63, using: &rng)
                )
            case 1:
                return .bytes(
                    (0..<Int.random(in: 0..<40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                )
            case 2:
                return .text(
                    String((0..<Int.random(in: 0..<10, using: &rng)).map { _ in "aé€😀".randomElement(using: &rng)! })
                )
            case 3: return .bool(Bool.random(using: &rng))
            case 4: return .null
            case 5: return .array((0..<Int.random(in: 0..<5, using: &rng)).map { _ in value(depth + 1) })
            default:
                var entries: [CBOR.Entry] = []
                for i in 0..<Int.random(in: 0..<5, using: &rng) {
                    entries.append(.init(Bool.random(using: &rng) ? .int(Int64(i)) : .text("k\(i)"), value(depth + 1)))
                }
                return .map(entries)
            }
        }
        for _ in 0..<3000 {
            let v = value(0)
            var bytes = TestCBOR.encode(v)
            #expect(try CBOR(decoding: bytes) == v)
            for _ in 0..<4 {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
                _ = try? CBOR(decoding: bytes)
            }
        }
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0..<24, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = try? CBOR(decoding: bytes)
            _ = try? AuthenticatorData(parsing: Array(repeating: 0, count: 32) + [0xC5, 0, 0, 0, 1] + bytes)
        }
    }
}
