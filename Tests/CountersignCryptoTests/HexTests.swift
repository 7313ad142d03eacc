import Testing

@testable import CountersignCrypto

@Suite struct HexTests {
    @Test func roundTripAndRefusals() {
        let all = (0...255).map(UInt8.init)
        #expect(Hex.encode(all).count == 512)
        #expect(Hex.encode([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        #expect(Hex.decode(Hex.encode(all)) == all)
        #expect(Hex.decode("00FFaB") == [0x00, 0xff, 0xab])
        #expect(Hex.decode("") == [])
        for bad in ["0", "abc", "0g", "zz", " 0", "0x00", "é0"] { #expect(Hex.decode(bad) == nil, "\(bad)") }
    }
}
