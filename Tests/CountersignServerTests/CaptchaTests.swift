import CountersignTestSupport
import Foundation
import Testing

@testable import CountersignServer

/// ALTCHA v1 challenges: the policy, single use, expiry, forgery, and the PyPI `altcha` package both ways.
@Suite(.closesStorage) struct CaptchaTests {
    static func python(_ script: String, _ args: [String] = []) throws -> String {
        let r = try Spawned.run("/usr/bin/env", ["python3", "-c", script] + args)
        guard r.status == 0 else {
            throw ConfigurationError("python failed: \(String(decoding: r.stderr, as: UTF8.self))")
        }
        return String(decoding: r.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(arguments: Backend.available)
    func alwaysPolicySingleUseExpiryAndForgery(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.captcha = .always }
        try await h.run { api in
            let none = try await api.register("captcha1")
            #expect(none.status == 400 && none.code == "captcha-required" && none.isProblem)
            let solution = try await api.solveCaptcha()
            #expect(try await api.register("captcha1", captcha: solution).status == 201)
            let reused = try await api.signIn("captcha1", captcha: solution)
            #expect(
                reused.code == "captcha-invalid" && (reused.json["detail"] as? String)?.contains("already used") == true
            )
            let another = try await api.solveCaptcha()
            #expect(try await api.signIn("captcha1", captcha: another).status == 201)
            #expect(try await api.signIn("captcha1").code == "captcha-required", "the seed app asks every time")

            // Altered number, forged signature, junk, and an expired challenge.
            let fresh = try await api.solveCaptcha()
            var obj = try JSONSerialization.jsonObject(with: Data(base64Encoded: fresh)!) as! [String: Any]
            obj["number"] = (obj["number"] as! Int) + 1
            let wrong = try JSONSerialization.data(withJSONObject: obj).base64EncodedString()
            #expect(try await api.signIn("captcha1", captcha: wrong).code == "captcha-invalid")
            obj["number"] = (obj["number"] as! Int) - 1
            obj["signature"] = String(repeating: "0", count: 64)
            let forged = try JSONSerialization.data(withJSONObject: obj).base64EncodedString()
            #expect(try await api.signIn("captcha1", captcha: forged).code == "captcha-invalid")
            for junk in ["", "!!!", Data("{}".utf8).base64EncodedString(), String(repeating: "A", count: 10_000)] {
                let r = try await api.signIn("captcha1", captcha: junk)
                #expect(
                    r.status == 400 && ["captcha-invalid", "captcha-required"].contains(r.code ?? ""),
                    "\(junk.prefix(10))"
                )
            }
            let late = try await api.solveCaptcha()
            h.clock.advance(11 * 60)
            let expired = try await api.signIn("captcha1", captcha: late)
            #expect(
                expired.code == "captcha-invalid" && (expired.json["detail"] as? String)?.contains("expired") == true
            )
        }
    }

    @Test(arguments: Backend.available)
    func riskPolicyAsksAfterAFailure(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.captcha = .risk }
        try await h.run { api in
            let first = try await api.solveCaptcha()
            #expect(try await api.register("risky", captcha: first).status == 201, "registration still asks")
            #expect(try await api.signIn("risky").status == 201, "no failure yet: no captcha")
            #expect(try await api.signIn("risky", "wrong password").status == 401)
            #expect(try await api.signIn("risky").code == "captcha-required")
            #expect(try await api.signIn("someone-else").code == "captcha-required", "the address failed too")
            let second = try await api.solveCaptcha()
            #expect(try await api.signIn("risky", captcha: second).status == 201)
        }
    }

    /// Issue 8.4: a failure keeps asking for the stated 15 minutes, though the throttle bucket that once
    /// stood in for this memory refills in seconds; per address and per username separately.
    @Test(arguments: Backend.available)
    func riskPolicyRemembersAFailureForFifteenMinutes(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.captcha = .risk }
        try await h.run { api in
            let solution = try await api.solveCaptcha()
            #expect(try await api.register("pacer", captcha: solution).status == 201)
            #expect(try await api.signIn("sprayed1", "wrong password").status == 401, "no failure yet: no captcha")
            h.clock.advance(60)
            #expect(
                try await api.signIn("sprayed2", "wrong password").code == "captcha-required",
                "a minute later, still asked"
            )
            h.clock.advance(15 * 60 - 61)
            #expect(
                try await api.signIn("sprayed3", "wrong password").code == "captcha-required",
                "just under 15 minutes"
            )
            h.clock.advance(2)
            #expect(
                try await api.signIn("pacer").status == 201,
                "15 minutes after the failure, the address is trusted again"
            )
        }
        // Per username: a failure for a name from one address asks a captcha of that name from any address.
        let other = RequestOrigin(address: "198.51.100.7", userAgent: "")
        let third = RequestOrigin(address: "2001:db8:7::1", userAgent: "")
        let h2 = try await Harness.make(backend) { $0.captcha = .risk }
        await #expect(throws: SignInError.invalidCredentials(delayedUntil: nil, locked: false)) {
            try await h2.signIn.verifySignIn(
                username: "nobody-here",
                password: "wrong password",
                captcha: nil,
                origin: other
            )
        }
        h2.clock.advance(5 * 60)
        await #expect(throws: CaptchaError.required, "the username failed, from another address") {
            try await h2.signIn.verifySignIn(
                username: "nobody-here",
                password: "wrong password",
                captcha: nil,
                origin: third
            )
        }
        await #expect(
            throws: SignInError.invalidCredentials(delayedUntil: nil, locked: false),
            "another name from a clean address"
        ) {
            try await h2.signIn.verifySignIn(
                username: "someone-else",
                password: "wrong password",
                captcha: nil,
                origin: RequestOrigin(address: "2001:db8:8::1", userAgent: "")
            )
        }
        await #expect(throws: CaptchaError.required, "the IPv4-mapped form is the same address") {
            try await h2.signIn.verifySignIn(
                username: "fresh-name",
                password: "wrong password",
                captcha: nil,
                origin: RequestOrigin(address: "::ffff:198.51.100.7", userAgent: "")
            )
        }
        await h2.close()
    }

    /// One solution sent by 20 requests at once is accepted by exactly one of them.
    @Test(arguments: Backend.available)
    func oneSolutionUsedConcurrentlyIsSpentOnce(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.captcha = .always }
        try await h.run { api in
            let first = try await api.solveCaptcha()
            #expect(try await api.register("racer", captcha: first).status == 201)
            let solution = try await api.solveCaptcha()
            let replies = try await withThrowingTaskGroup(of: API.Reply.self) { group in
                for _ in 0..<20 { group.addTask { try await api.signIn("racer", captcha: solution) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(replies.filter { $0.status == 201 }.count == 1, "\(replies.map(\.status))")
            #expect(replies.filter { $0.code == "captcha-invalid" }.count == 19)
        }
    }

    /// The PyPI `altcha` package solves our challenges, verifies our signatures with our key, and its own
    /// challenges (signed with our key) pass our verification.
    @Test func interoperatesWithThePythonAltchaPackage() async throws {
        let h = try await Harness.make(.sqlite) {
            $0.captcha = .always
            $0.captchaMaxNumber = 50_000
        }
        let key = try await h.store.serverSecret(name: "altcha-hmac-key") { [] }
        let keyHex = key.map { String(format: "%02x", $0) }.joined()
        try await h.run { api in
            let c = try await api.call(.get, "/v1/captcha")
            #expect(c.headers[.cacheControl] == "no-store")
            let payload = try Self.python(
                """
                import sys, json, base64, altcha
                c = json.loads(sys.argv[1]); key = bytes.fromhex(sys.argv[2])
                s = altcha.solve_challenge_v1(c['challenge'], c['salt'], c['algorithm'], c['maxnumber'])
                p = base64.b64encode(json.dumps({'algorithm': c['algorithm'], 'challenge': c['challenge'], 'number': s.number,
                                                 'salt': c['salt'], 'signature': c['signature']}).encode()).decode()
                ok, err = altcha.verify_solution_v1(p, key, check_expires=False)
                assert ok, err
                print(p)
                """,
                [String(decoding: c.body, as: UTF8.self), keyHex]
            )
            #expect(try await api.register("pythonic", captcha: payload).status == 201)

            let theirs = try Self.python(
                """
                import sys, json, base64, datetime, altcha
                key = bytes.fromhex(sys.argv[1])
                exp = datetime.datetime.fromtimestamp(int(sys.argv[2]), datetime.timezone.utc)
                c = altcha.create_challenge_v1(hmac_key=key, max_number=1000, expires=exp)
                s = altcha.solve_challenge_v1(c)
                print(base64.b64encode(json.dumps({'algorithm': c.algorithm, 'challenge': c.challenge, 'number': s.number,
                                                   'salt': c.salt, 'signature': c.signature}).encode()).decode())
                """,
                [keyHex, String(Int(h.clock.now().timeIntervalSince1970) + 300)]
            )
            #expect(try await api.signIn("pythonic", captcha: theirs).status == 201)
        }
    }
}
