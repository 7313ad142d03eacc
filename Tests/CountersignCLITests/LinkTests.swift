import CountersignTestSupport
import Foundation
import Testing

/// How the two executables are linked (Package.swift, `leanStart`), read back from the built files with
/// binutils' `readelf`: position-independent, the GOT read-only after start (full RELRO), no executable
/// stack, relative relocations packed, and no table of every symbol for the loader to search.
@Suite struct LinkTests {
    @Test(arguments: ["countersign", "countersign-server"])
    func theExecutablesAreHardenedAndStartLean(_ name: String) throws {
        let path = URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().appendingPathComponent(name).path
        let cli = try CLI()
        let dynamic = try cli.run("readelf", ["-dW", path])
        try #require(dynamic.status == 0, "readelf -d \(path): \(dynamic.stderr)")
        #expect(dynamic.text.contains("(RELR)"), "relative relocations are not packed (DT_RELR):\n\(dynamic.text)")
        #expect(dynamic.text.contains("BIND_NOW"), "not linked with -z now:\n\(dynamic.text)")
        #expect(dynamic.text.contains("PIE"), "not position-independent:\n\(dynamic.text)")
        #expect(!dynamic.text.contains("TEXTREL"), "relocations in the text")

        let segments = try cli.run("readelf", ["-lW", path]).text
        #expect(segments.contains("GNU_RELRO"), "no RELRO segment")
        let stack = segments.split(separator: "\n").first { $0.contains("GNU_STACK") } ?? ""
        #expect(!stack.isEmpty && !stack.contains("RWE"), "the stack is executable: \(stack)")

        // Exporting every symbol made `.dynsym` 1 MiB in the release CLI (4 MiB with its strings and hash);
        // what is left is the imports and what the debug build's shared Swift libraries use.
        let sections = try cli.run("readelf", ["-SW", path]).text
        let line = sections.split(separator: "\n").first { $0.contains(" .dynsym ") }
        let fields = line.map { $0.split(separator: " ", omittingEmptySubsequences: true) } ?? []
        let size = fields.firstIndex(of: "DYNSYM").flatMap { i in
            i + 3 < fields.count ? Int(fields[i + 3], radix: 16) : nil
        }
        let dynsym = try #require(size, "no .dynsym size in: \(line ?? "")")
        #expect(dynsym < 256 * 1024, ".dynsym is \(dynsym) bytes: are all symbols exported again?")
    }
}
