import CountersignAPI
import Foundation
import Testing

/// Dates on the wire keep milliseconds (a key's retiredAt is compared with an envelope's signed time in
/// milliseconds), and reading takes any RFC 3339 date-time and nothing else.
@Suite struct WireDateTests {
    @Test func formatsMillisecondsInUTC() {
        #expect(WireDate.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(WireDate.format(Date(timeIntervalSince1970: 1_800_000_000.123)) == "2027-01-15T08:00:00.123Z")
        #expect(WireDate.format(Date(timeIntervalSince1970: 951_782_400.999)) == "2000-02-29T00:00:00.999Z")
        #expect(WireDate.format(Date(timeIntervalSince1970: -0.001)) == "1969-12-31T23:59:59.999Z")
        #expect(WireDate.format(Date(timeIntervalSince1970: 4_102_444_799.9996)) == "2100-01-01T00:00:00.000Z")
    }

    /// An envelope's signed time is the sender's to choose: formatting it in an error message must not
    /// trap, and whatever is written reads back.
    @Test func formattingIsTotal() throws {
        let cases: [(TimeInterval, String)] = [
            (1e300, "9999-12-31T23:59:59.999Z"), (-1e300, "0000-01-01T00:00:00.000Z"),
            (.infinity, "9999-12-31T23:59:59.999Z"), (-.infinity, "0000-01-01T00:00:00.000Z"),
            (.nan, "1970-01-01T00:00:00.000Z"), (Double(UInt64.max) / 1000, "9999-12-31T23:59:59.999Z"),
            (253_402_300_800, "9999-12-31T23:59:59.999Z"), (-62_167_219_200, "0000-01-01T00:00:00.000Z"),
        ]
        for (t, want) in cases {
            let text = WireDate.format(Date(timeIntervalSince1970: t))
            #expect(text == want, "\(t)")
            #expect(WireDate.parse(text) != nil, "\(text)")
        }
    }

    /// Clients built on Foundation's own ISO 8601 decoding (the CLI before WireDate) read the new form.
    @Test func foundationsISO8601DecoderReadsIt() throws {
        struct Box: Decodable { var at: Date }
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        let box = try d.decode(Box.self, from: Data(#"{"at":"2027-01-15T08:00:00.123Z"}"#.utf8))
        #expect(abs(box.at.timeIntervalSince1970 - 1_800_000_000.123) < 0.001)
    }

    @Test func everyMillisecondRoundTrips() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let ms = Int64.random(in: -2_000_000_000_000...5_000_000_000_000, using: &rng)
            let date = Date(timeIntervalSince1970: TimeInterval(ms) / 1000)
            let text = WireDate.format(date)
            let back = try #require(WireDate.parse(text), "\(text)")
            #expect(Int64((back.timeIntervalSince1970 * 1000).rounded()) == ms, "\(text)")
            // Foundation's own reader agrees on the instant.
            let foundation = try Date(
                text,
                strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)
            )
            #expect(abs(foundation.timeIntervalSince1970 - back.timeIntervalSince1970) < 0.0005, "\(text)")
        }
    }

    @Test func readsOtherRFC3339Forms() throws {
        let base = 1_800_000_000.0
        let cases: [(String, Double)] = [
            ("2027-01-15T08:00:00Z", base),
            ("2027-01-15t08:00:00z", base),
            ("2027-01-15T08:00:00.5Z", base + 0.5),
            ("2027-01-15T08:00:00.123456789Z", base + 0.123),
            ("2027-01-15T08:00:00.0005Z", base + 0.001),
            ("2027-01-15T09:30:00+01:30", base),
            ("2027-01-15T07:00:00.250-01:00", base + 0.25),
        ]
        for (text, want) in cases {
            let got = try #require(WireDate.parse(text), "\(text)")
            #expect(abs(got.timeIntervalSince1970 - want) < 0.0000001, "\(text): \(got.timeIntervalSince1970)")
        }
    }

    @Test func refusesWhatIsNotADateTime() {
        for text in [
            "", "2027-01-15", "2027-01-15T08:00:00", "2027-01-15 08:00:00Z", "2027-13-01T00:00:00Z",
            "2027-02-29T00:00:00Z", "2027-01-32T00:00:00Z", "2027-01-15T24:00:00Z", "2027-01-15T08:60:00Z",
            "2027-01-15T08:00:60Z", "2027-01-15T08:00:00.Z", "2027-01-15T08:00:00.1234567891Z",
            "2027-01-15T08:00:00+0100", "2027-01-15T08:00:00Z ", "+2027-01-15T08:00:00Z", "2027-1-15T08:00:00Z",
            "1800000000", "２027-01-15T08:00:00Z",
        ] {
            #expect(WireDate.parse(text) == nil, "\(text)")
        }
    }

    @Test func theAPICodersUseIt() throws {
        struct Box: Codable, Equatable { var at: Date }
        let box = Box(at: Date(timeIntervalSince1970: 1_800_000_000.042))
        let json = String(decoding: try APICoding.encoder().encode(box), as: UTF8.self)
        #expect(json == #"{"at":"2027-01-15T08:00:00.042Z"}"#)
        #expect(try APICoding.decoder().decode(Box.self, from: Data(json.utf8)) == box)
        #expect(throws: DecodingError.self) {
            try APICoding.decoder().decode(Box.self, from: Data(#"{"at":"yesterday"}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try APICoding.decoder().decode(Box.self, from: Data(#"{"at":1800000000}"#.utf8))
        }
    }
}
