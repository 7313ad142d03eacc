import CountersignQR
import CountersignTestSupport
import Foundation
import Testing

/// QR codes checked by an independent decoder: what zbarimg (Debian's zbar-tools, installed by
/// scripts/test.sh) reads back from the PBM and PNG bytes must be the text, byte for byte.
@Suite struct QRCodeTests {
    static let pairing = "countersign://pair?key=ABCDEFGHJKMN&server=http://127.0.0.1:8080"
    static let authentication = "countersign://auth?authentication_code=7F45HGF5&server=http://127.0.0.1:8080"
    static let totp =
        "otpauth://totp/Countersign:alice?secret=JBSWY3DPEHPK3PXP&issuer=Countersign&algorithm=SHA1&digits=6&period=30"
    /// 2,331 bytes, what version 40 holds in 8-bit mode at level M; the splitter's denser modes for the
    /// digits and capitals only leave room to spare.
    static let nearLimit: String = {
        let head = "countersign://pair?key=ABCDEFGHJKMN&server=http://127.0.0.1:8080&note="
        let pad = "the-quick-brown-fox-jumps-over-the-lazy-dog."
        var text = head
        while text.utf8.count < 2331 { text += pad }
        return String(text.utf8.prefix(2331))!
    }()

    /// zbarimg's output, without the newline it ends with; nil when it finds no code.
    static func zbar(_ image: [UInt8], named name: String, in t: CLI) throws -> String? {
        let zbarimg = "/usr/bin/zbarimg"
        try #require(
            FileManager.default.isExecutableFile(atPath: zbarimg),
            "zbarimg is missing: bash scripts/test.sh installs it (Debian zbar-tools)"
        )
        try t.write(name, Data(image))
        let r = try t.run(zbarimg, ["--raw", "-q", name])
        guard r.status == 0 else { return nil }
        var text = r.text
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    /// By name, so that the test log does not print 2,331 bytes.
    static let uris = [
        "pairing": pairing, "authentication code": authentication, "otpauth": totp, "near the limit": nearLimit,
    ]

    @Test(arguments: uris.keys.sorted())
    func zbarReadsBackTheExactTextFromPBMAndPNG(uri: String) throws {
        let t = try CLI()
        let text = try #require(Self.uris[uri])
        let code = try QRCode(text)
        #expect(
            try Self.zbar(code.pbm(), named: "code.pbm", in: t) == text,
            "PBM, \(text.utf8.count) bytes, size \(code.size)"
        )
        #expect(
            try Self.zbar(code.png(), named: "code.png", in: t) == text,
            "PNG, \(text.utf8.count) bytes, size \(code.size)"
        )
        // A larger scale is the same picture.
        #expect(try Self.zbar(code.png(scale: 7), named: "code7.png", in: t) == text, "PNG at scale 7")
    }

    @Test(arguments: QRCode.Level.allCases)
    func everyCorrectionLevelDecodes(level: QRCode.Level) throws {
        let t = try CLI()
        let code = try QRCode(Self.totp, correction: level)
        #expect(try Self.zbar(code.pbm(scale: 3), named: "code.pbm", in: t) == Self.totp, "\(level)")
    }

    @Test func theLongestTextTakesTheLargestSymbol() throws {
        #expect(try QRCode(Self.nearLimit).size == 177)
        #expect(try QRCode(Self.pairing).size < 177)
    }

    @Test func textTooLongForAQRCodeIsRefusedWithAClearError() throws {
        let text = Self.nearLimit + String(repeating: "x", count: 700)
        #expect(throws: QRCodeError.tooLong(bytes: text.utf8.count, correction: .medium)) { try QRCode(text) }
        do {
            _ = try QRCode(text, correction: .high)
            Issue.record("a 3,031-byte text encoded at level H")
        } catch {
            #expect("\(error)" == "the text (3031 bytes) is too long for a QR code at error correction H (30%)")
        }
        // What does not fit at M can fit at L (2,953 bytes in 8-bit mode).
        #expect(throws: Never.self) {
            try QRCode(Self.nearLimit + String(repeating: "x", count: 600), correction: .low)
        }
    }

    @Test func differentTextsGiveDifferentMatrices() throws {
        let a = try QRCode(Self.pairing)
        let b = try QRCode(Self.pairing.replacingOccurrences(of: "ABCDEFGHJKMN", with: "ABCDEFGHJKMP"))
        #expect(a.size == b.size)
        #expect(a != b)
        let differing = (0..<a.size).flatMap { y in
            (0..<a.size).filter { x in a.isDark(x: x, y: y) != b.isDark(x: x, y: y) }
        }
        #expect(differing.count > 10)
        #expect(try QRCode(Self.pairing) == a, "encoding is deterministic")
    }

    @Test func textWithNULIsEncodedNotTruncated() throws {
        #expect(try QRCode("a\u{0}b") != QRCode("a"))
    }

    /// Two modules per character, quiet zone included, only the four block characters, and the very
    /// matrix back when the characters are read as pairs of modules.
    @Test(arguments: [false, true])
    func terminalTextIsTheMatrixInHalfBlocks(invert: Bool) throws {
        for text in [Self.pairing, Self.authentication, Self.totp] {
            let code = try QRCode(text)
            let out = code.terminal(invert: invert)
            #expect(out.hasSuffix("\n"))
            let lines = out.dropLast().split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == code.size / 2 + 5, "(size + 8 quiet rows) / 2, rounded up")
            #expect(lines.allSatisfy { $0.count == code.size + 8 })
            #expect(out.allSatisfy { "▀▄█ \n".contains($0) })
            for (row, line) in lines.enumerated() {
                for (column, character) in line.enumerated() {
                    let x = column - 4
                    let top = 2 * row - 4
                    let (upper, lower): (Bool, Bool) =
                        switch character {
                        case "█": (true, true)
                        case "▀": (true, false)
                        case "▄": (false, true)
                        default: (false, false)
                        }
                    // The glyph draws light modules for a dark terminal, dark ones when inverted.
                    #expect(upper == (code.isDark(x: x, y: top) == invert), "row \(row) column \(column)")
                    #expect(lower == (code.isDark(x: x, y: top + 1) == invert), "row \(row) column \(column)")
                }
            }
            // The quiet zone is all ink (dark terminal) or all blank (light terminal).
            #expect(lines[0].allSatisfy { $0 == (invert ? " " : "█") })
        }
    }

    @Test func imagesCarryTheQuietZoneAndTheirHeaders() throws {
        let code = try QRCode(Self.pairing)
        let side = (code.size + 8) * 4
        let pbm = code.pbm()
        let header = Array("P4\n\(side) \(side)\n".utf8)
        #expect(Array(pbm.prefix(header.count)) == header)
        #expect(pbm.count == header.count + side * ((side + 7) / 8))
        #expect(pbm[header.count...].prefix((side + 7) / 8 * 16).allSatisfy { $0 == 0 }, "4 light modules on top")
        let png = code.png()
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(
            Array(png.suffix(12)) == [0, 0, 0, 0, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82],
            "IEND and its CRC"
        )
        // The rows repeat `scale` times and runs are long: the deflate stream must find that.
        let large = try QRCode(Self.nearLimit)
        #expect(large.png().count * 3 < large.pbm().count, "PNG \(large.png().count) bytes, PBM \(large.pbm().count)")
    }
}
