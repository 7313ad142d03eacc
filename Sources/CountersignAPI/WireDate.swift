#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Dates on the wire: RFC 3339 in UTC with milliseconds, `2026-11-26T04:52:06.123Z`.
///
/// Milliseconds because the server keeps them and clients compare a key's `retiredAt` with an envelope's
/// signed time, which is in milliseconds (SPEC §4d): whole seconds would refuse a message signed in the
/// second its key was replaced. Reading accepts any RFC 3339 date-time (no fraction, up to 9 digits, an
/// offset) and rounds to the millisecond, so older servers' answers still decode.
public enum WireDate {
    /// Total: an instant outside the years 0000–9999 (never a real one here, but an envelope's signed time
    /// is the sender's to choose) is written as the nearest end of that range, and NaN as the epoch, so
    /// formatting never traps and what is written always reads back.
    public static func format(_ date: Date) -> String {
        let t = date.timeIntervalSince1970 * 1000
        let ms = t.isNaN ? 0 : Int64(min(max(t.rounded(), Double(firstMs)), Double(lastMs)))
        let (secs, milli) = floorDivide(ms, 1000)
        let (days, secOfDay) = floorDivide(secs, 86_400)
        let (y, m, d) = civil(fromDays: days)
        func pad(_ v: Int64, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secOfDay / 3600, 2)):\(pad(secOfDay / 60 % 60, 2))"
            + ":\(pad(secOfDay % 60, 2)).\(pad(milli, 3))Z"
    }

    /// Nil unless `text` is an RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS[.f…](Z|±HH:MM)`.
    public static func parse(_ text: String) -> Date? {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= b.count else { return nil }
            var v: Int64 = 0
            for k in i..<i + n {
                guard (0x30...0x39).contains(b[k]) else { return nil }
                v = v * 10 + Int64(b[k] - 0x30)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8...) -> Bool {
            guard i < b.count, c.contains(b[i]) else { return false }
            i += 1
            return true
        }
        guard let y = digits(4), expect(0x2D), let mo = digits(2), expect(0x2D), let d = digits(2),
            expect(0x54, 0x74), let h = digits(2), expect(0x3A), let mi = digits(2), expect(0x3A),
            let s = digits(2)
        else { return nil }
        guard (1...12).contains(mo), d >= 1, d <= daysIn(month: mo, year: y), h < 24, mi < 60, s < 60 else {
            return nil
        }
        var fractionMs: Int64 = 0
        if i < b.count, b[i] == 0x2E {
            i += 1
            let start = i
            var scaled: Int64 = 0
            while i < b.count, (0x30...0x39).contains(b[i]), i - start < 9 {
                scaled = scaled * 10 + Int64(b[i] - 0x30)
                i += 1
            }
            let n = i - start
            guard n > 0 else { return nil }
            for _ in n..<9 { scaled *= 10 }
            fractionMs = (scaled + 500_000) / 1_000_000
        }
        var offset: Int64 = 0
        if expect(0x5A, 0x7A) {
            offset = 0
        } else {
            guard i < b.count, b[i] == 0x2B || b[i] == 0x2D else { return nil }
            let sign: Int64 = b[i] == 0x2D ? -1 : 1
            i += 1
            guard let oh = digits(2), expect(0x3A), let om = digits(2), oh < 24, om < 60 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        }
        guard i == b.count else { return nil }
        let secs = days(fromCivil: y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset
        return Date(timeIntervalSince1970: TimeInterval(secs * 1000 + fractionMs) / 1000)
    }

    /// 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z, in ms since the epoch.
    static let firstMs: Int64 = -62_167_219_200_000
    static let lastMs: Int64 = 253_402_300_799_999

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a >= 0 ? a / b : -((-a + b - 1) / b)
        return (q, a - q * b)
    }

    private static func daysIn(month m: Int64, year y: Int64) -> Int64 {
        switch m {
        case 2: (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days_from_civil and civil_from_days (proleptic Gregorian, day 0 = 1970-01-01).
    private static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = floorDivide(y, 400).0
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = floorDivide(z, 146_097).0
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
