import CountersignCrypto
import Crypto
import Foundation
import Synchronization
import Testing

@testable import CountersignServer

/// Bytes from a fixed script, then from a SHA-256 counter stream: repeatable and fully controllable.
final class ScriptedRandom: RandomSource {
    private let state: Mutex<(script: [UInt8], counter: UInt64)>
    init(_ script: [UInt8] = []) { state = Mutex((script, 0)) }
    func bytes(_ count: Int) -> [UInt8] {
        state.withLock { s in
            var out: [UInt8] = []
            while out.count < count {
                if !s.script.isEmpty {
                    out.append(s.script.removeFirst())
                    continue
                }
                s.counter += 1
                out += Array(SHA256.hash(data: withUnsafeBytes(of: s.counter) { Array($0) })).prefix(count - out.count)
            }
            return out
        }
    }
}

/// The MFA rules as pure values with an injected clock and randomness (docs/PROTOCOL.md §3), without a
/// server: every transition, every refusal, every expiry.
@Suite(.closesStorage) struct MFAStateTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    // MARK: Codes people type

    @Test func humanCodesUseTheAlphabetUniformly() {
        // Bytes 248…255 would favour the first 8 symbols if folded in: they are skipped.
        let r = ScriptedRandom([248, 249, 255, 0, 30, 31, 247])
        #expect(
            HumanCode.generate(length: 4, random: r) == "2Z2Z",
            "0→2, 30→Z, 31→2, 247 (mod 31 = 30)→Z; 248, 249, 255 skipped"
        )
        let many = HumanCode.generate(length: 31_000, random: ScriptedRandom())
        let counts = Dictionary(grouping: many, by: { $0 }).mapValues(\.count)
        #expect(Set(counts.keys) == Set(HumanCode.alphabet))
        #expect(counts.values.allSatisfy { (850...1150).contains($0) }, "about 1000 each: \(counts.values.sorted())")
        #expect(!many.contains { "01OIL".contains($0) })
    }

    @Test func typedCodesAreNormalisedOrRefused() {
        #expect(HumanCode.normalize("abcd-efgh jkmn", length: 12) == "ABCDEFGHJKMN")
        #expect(HumanCode.normalize("ABCD-EFGH-JKM0", length: 12) == nil, "0 is not in the alphabet")
        #expect(HumanCode.normalize("ABCDEFGHJKMNP", length: 12) == nil, "too long")
        #expect(HumanCode.normalize("ABCDEFGHJKM", length: 12) == nil, "too short")
        #expect(HumanCode.normalize("", length: 8) == nil)
        // PingOne accepts the code bare or as a URI's authentication_code.
        for input in [
            "7F45HGF5", "7f45-hgf5", "https://myapp.com/pingonesdk?authentication_code=7F45HGF5",
            "pingonesdk?authentication_code=7F45HGF5",
            "countersign://auth?authentication_code=7f45hgf5&server=http://x",
        ] {
            #expect(HumanCode.extract(input, queryItem: "authentication_code", length: 8) == "7F45HGF5", "\(input)")
        }
        #expect(HumanCode.extract("https://x/?other=7F45HGF5", queryItem: "authentication_code", length: 8) == nil)
        #expect(HumanCode.grouped("ABCDEFGHJKMN", by: 4) == "ABCD-EFGH-JKMN")
    }

    // MARK: Number matching

    @Test func numbersAndOptions() {
        let r = ScriptedRandom()
        for _ in 0..<200 {
            let m = NumberMatching.make(kind: .selectNumber, digits: 2, random: r)
            #expect(
                m.number.count == 2 && m.options.count == 3 && Set(m.options).count == 3 && m.options.contains(m.number)
            )
            #expect(
                m.matches(m.number) && !m.matches(m.options.first { $0 != m.number }) && !m.matches(nil)
                    && !m.matches(m.number + "0")
            )
        }
        let six = NumberMatching.make(kind: .enterManually, digits: 6, random: r)
        #expect(six.number.count == 6 && six.options.isEmpty, "ENTER_MANUALLY carries no options")
        // The right number's place among the options varies.
        let places = Set(
            (0..<60).map { _ in NumberMatching.make(kind: .selectNumber, digits: 2, random: r) }.map {
                $0.options.firstIndex(of: $0.number)!
            }
        )
        #expect(places == [0, 1, 2])
    }

    // MARK: Transactions

    func transaction(devices: [String] = ["phone", "tablet"], digits: Int = 2) -> MFATransaction {
        let matching =
            devices.isEmpty
            ? nil : NumberMatching.make(kind: .enterManually, digits: digits, random: ScriptedRandom([1, 2, 3, 4]))
        return MFATransaction(
            id: "t",
            accountID: "a",
            now: t0,
            lifetime: 60,
            challenges: Dictionary(uniqueKeysWithValues: devices.map { ($0, Array($0.utf8)) }),
            matching: matching
        )
    }

    @Test func approvalWithTheRightNumberCompletesOnceAndIsCollectedOnce() {
        var tx = transaction()
        #expect(tx.status == .pushConfirmationRequired)
        let number = tx.matching!.number
        #expect(
            tx.answer(
                device: "phone",
                nonce: Array("phone".utf8),
                approve: true,
                number: number,
                report: false,
                now: t0 + 5
            ) == .completed
        )
        #expect(
            tx.answer(
                device: "tablet",
                nonce: Array("tablet".utf8),
                approve: false,
                number: nil,
                report: true,
                now: t0 + 6
            ) == .refused(.finished),
            "the second answer changes nothing"
        )
        #expect(tx.status == .completed)
        #expect(tx.collect(now: t0 + 7) && !tx.collect(now: t0 + 8), "the session is released once")
    }

    @Test func wrongNumberDenialAndReportFail() {
        var a = transaction()
        var b = transaction()
        var c = transaction()
        let wrong = a.matching!.number == "00" ? "01" : "00"
        #expect(
            a.answer(device: "phone", nonce: Array("phone".utf8), approve: true, number: wrong, report: false, now: t0)
                == .failed(.wrongNumber)
        )
        #expect(
            b.answer(device: "phone", nonce: Array("phone".utf8), approve: false, number: nil, report: false, now: t0)
                == .failed(.denied)
        )
        #expect(
            c.answer(device: "phone", nonce: Array("phone".utf8), approve: false, number: nil, report: true, now: t0)
                == .failed(.reported)
        )
        #expect(a.status == .failed && b.status == .failed && c.status == .failed)
        #expect(!a.collect(now: t0) && !b.collect(now: t0) && !c.collect(now: t0), "nothing to collect")
        #expect(a.failure == .wrongNumber && b.failure == .denied && c.failure == .reported)
    }

    @Test func answersForAnotherChallengeOrTooLateAreRefused() {
        var tx = transaction()
        let n = tx.matching!.number
        #expect(
            tx.answer(device: "laptop", nonce: Array("laptop".utf8), approve: true, number: n, report: false, now: t0)
                == .refused(.notThisChallenge),
            "a device that was not asked"
        )
        #expect(
            tx.answer(device: "phone", nonce: Array("tablet".utf8), approve: true, number: n, report: false, now: t0)
                == .refused(.notThisChallenge),
            "another device's nonce"
        )
        #expect(
            tx.answer(device: "phone", nonce: [], approve: true, number: n, report: false, now: t0)
                == .refused(.notThisChallenge)
        )
        #expect(tx.status == .pushConfirmationRequired, "refusals change nothing")
        #expect(tx.status(at: t0 + 60) == .pushConfirmationTimedOut)
        #expect(
            tx.answer(
                device: "phone",
                nonce: Array("phone".utf8),
                approve: true,
                number: n,
                report: false,
                now: t0 + 60
            ) == .refused(.expired)
        )
        #expect(tx.status == .pushConfirmationTimedOut && !tx.collect(now: t0 + 61))
        #expect(tx.code(valid: true, now: t0 + 61) == .refused(.finished), "a late passcode does not revive it")
    }

    @Test func codesAreLimitedAndPushNeedsAnAuthenticator() {
        var tx = transaction(devices: [])
        #expect(tx.status == .otpRequired)
        #expect(
            tx.answer(device: "phone", nonce: [], approve: true, number: "00", report: false, now: t0)
                == .refused(.pushNotOffered)
        )
        for left in (1...4).reversed() { #expect(tx.code(valid: false, now: t0) == .stillOpen(attemptsLeft: left)) }
        #expect(tx.code(valid: true, now: t0) == .completed, "the 5th try may still be right")
        var locked = transaction()
        for _ in 0..<4 { _ = locked.code(valid: false, now: t0) }
        #expect(locked.code(valid: false, now: t0) == .failed(.tooManyCodes))
        #expect(locked.code(valid: true, now: t0) == .refused(.finished))
    }

    // MARK: Push fatigue

    @Test func pushFatigueLimitsSuspendsAndEscalates() {
        var f = PushFatigue()
        for _ in 0..<5 {
            #expect(f.allowsPush(now: t0, policyDigits: 2).allowed)
            f.pushed()
        }
        #expect(!f.allowsPush(now: t0, policyDigits: 2).allowed, "5 pushes since the last success")
        f.finished(.completed, viaPush: false, now: t0)
        #expect(f.allowsPush(now: t0, policyDigits: 2) == (true, 2))
        f.finished(.failed(.denied), viaPush: true, now: t0)
        #expect(f.allowsPush(now: t0 + 3600, policyDigits: 2) == (true, 6), "a denial escalates to 6 digits")
        #expect(f.allowsPush(now: t0 + 86_400, policyDigits: 2) == (true, 2), "for a day")
        f.finished(.failed(.reported), viaPush: true, now: t0)
        #expect(!f.allowsPush(now: t0 + 90_000, policyDigits: 2).allowed, "a report suspends push")
        f.finished(.completed, viaPush: true, now: t0)
        #expect(!f.allowsPush(now: t0 + 90_000, policyDigits: 2).allowed, "not lifted by a push")
        f.finished(.completed, viaPush: false, now: t0)
        #expect(f.allowsPush(now: t0 + 90_000, policyDigits: 6) == (true, 6), "lifted by signing in another way")
    }

    // MARK: Authentication codes

    @Test func authenticationCodeStatuses() throws {
        var code = AuthenticationCode(codeHash: "h", approval: .required, now: t0)
        #expect(code.status == .pending)
        #expect(try code.claim(device: "phone", users: ["alice", "bob"], now: t0 + 1) == .claimed)
        #expect(throws: AuthenticationCode.Refusal.notClaimable) {
            try code.claim(device: "other", users: ["carol"], now: t0 + 2)
        }
        #expect(
            try code.claim(device: "phone", users: ["alice", "bob"], now: t0 + 2) == .claimed,
            "the claimer may look again"
        )
        #expect(throws: AuthenticationCode.Refusal.notYours) {
            try code.approve(device: "other", user: "alice", now: t0 + 2)
        }
        #expect(throws: AuthenticationCode.Refusal.notYours) {
            try code.approve(device: "phone", user: "carol", now: t0 + 2)
        }
        #expect(try code.approve(device: "phone", user: "bob", now: t0 + 3) == .completed)
        #expect(code.approvedUser == "bob")
        #expect(throws: AuthenticationCode.Refusal.notClaimable) { try code.deny(device: "phone", now: t0 + 4) }

        var denied = AuthenticationCode(codeHash: "h", approval: .required, now: t0)
        _ = try denied.claim(device: "phone", users: ["alice"], now: t0)
        #expect(try denied.deny(device: "phone", now: t0 + 1) == .denied && denied.approvedUser == nil)

        var late = AuthenticationCode(codeHash: "h", approval: .required, now: t0)
        _ = try late.claim(device: "phone", users: ["alice"], now: t0 + 30)
        #expect(
            try late.approve(device: "phone", user: "alice", now: t0 + 60) == .expired,
            "PingOne: approve returns EXPIRED when too late"
        )
        #expect(late.status == .expired && late.approvedUser == nil)
        var unclaimed = AuthenticationCode(codeHash: "h", approval: .required, now: t0)
        #expect(try unclaimed.claim(device: "phone", users: ["alice"], now: t0 + 61) == .expired)
        #expect(try unclaimed.deny(device: "phone", now: t0 + 62) == .expired)

        var auto = AuthenticationCode(codeHash: "h", approval: .notRequired, now: t0)
        #expect(
            try auto.claim(device: "phone", users: ["alice"], now: t0) == .completed && auto.approvedUser == "alice"
        )
        var choose = AuthenticationCode(codeHash: "h", approval: .notRequired, now: t0)
        #expect(
            try choose.claim(device: "phone", users: ["alice", "bob"], now: t0) == .claimed,
            "several users: one must be picked"
        )
        var nobody = AuthenticationCode(codeHash: "h", approval: .required, now: t0)
        #expect(throws: AuthenticationCode.Refusal.notClaimable) {
            try nobody.claim(device: "phone", users: [], now: t0)
        }
        #expect(
            Set(["CLAIMED", "EXPIRED", "DENIED", "COMPLETED"]).isSubset(
                of: Set([AuthenticationCode.Status.claimed, .expired, .denied, .completed].map(\.rawValue))
            )
        )
    }

    // MARK: Pairing keys and recovery codes

    @Test func pairingKeysAreSingleUseShortLivedAndFewAtATime() {
        let (text, record) = PairingKey.make(accountID: "a", now: t0, random: ScriptedRandom())
        #expect(text.count == 12 && PairingKey.parse(text.lowercased()) == text)
        #expect(PairingKey.parse("countersign://pair?key=\(HumanCode.grouped(text, by: 4))&server=http://x") == text)
        #expect(PairingKey.hash(PairingKey.parse(text)!) == record.hash)
        var key = record
        #expect(key.redeem(now: t0 + 599) == "a")
        #expect(key.redeem(now: t0 + 599) == nil, "used")
        var old = record
        #expect(old.redeem(now: t0 + 600) == nil, "expired at 10 minutes")
        let three = (0..<3).map { _ in PairingKey.make(accountID: "a", now: t0, random: ScriptedRandom()).record }
        #expect(!PairingKey.mayCreate(open: three, now: t0))
        #expect(PairingKey.mayCreate(open: three, now: t0 + 600), "expired ones do not count")
    }

    @Test func recoveryCodes() {
        let key = Array(repeating: UInt8(7), count: 32)
        let (shown, hashes) = RecoveryCodes.make(key: key, random: ScriptedRandom())
        #expect(
            shown.count == 10 && Set(shown).count == 10
                && shown.allSatisfy { $0.count == 11 && $0.dropFirst(5).first == "-" }
        )
        #expect(
            zip(shown, hashes).allSatisfy {
                RecoveryCodes.hash(typed: $0.0.lowercased().replacingOccurrences(of: "-", with: " "), key: key) == $0.1
            }
        )
        #expect(RecoveryCodes.hash(typed: shown[0], key: Array(repeating: 8, count: 32)) != hashes[0], "keyed")
        #expect(RecoveryCodes.hash(typed: "short", key: key) == nil)
    }
}
