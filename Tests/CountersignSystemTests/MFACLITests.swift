import CountersignTestSupport
import Foundation
import Testing

/// `countersign account login` with a second factor, `account mfa …` and `authenticator …` against real
/// `countersign serve` processes, one config directory per role (the account's, the authenticator's, the
/// one signing in), passed per run as MessagingCLITests does.
@Suite struct MFACLITests {
    typealias Dir = MessagingCLITests.Device

    /// A `countersign` run in the background whose standard output is read while it runs.
    final class Running: @unchecked Sendable {
        let process: Spawned
        private let output = Buffer()
        /// Signalled when the reader has seen the end of the output (the process and its pipe closed).
        private let outputEnded = DispatchSemaphore(value: 0)

        final class Buffer: @unchecked Sendable {
            private let lock = NSLock()
            private var data = Data()
            func append(_ d: Data) { lock.withLock { data.append(d) } }
            var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
        }
        private let errURL: URL

        /// `terminal`: run under script(1), on a pseudo-terminal whose input is `type(_:)`.
        init(_ d: Dir, _ args: [String], terminal: Bool = false) throws {
            let command = ["COUNTERSIGN_CONFIG_DIR=\(d.dir)", CLI.binary] + args
            errURL = d.t.dir.appendingPathComponent(".stderr-\(UUID().uuidString)")
            process = try Spawned(
                terminal ? "/usr/bin/script" : "/usr/bin/env",
                terminal ? ["-qfec", command.joined(separator: " "), "/dev/null"] : command,
                directory: d.t.dir.path,
                stdin: terminal ? .pipe : .null,
                stdout: .pipe,
                stderr: .file(errURL.path)
            )
            let reader = process.output!
            Thread { [output, outputEnded] in
                while true {
                    let chunk = reader.availableData
                    if chunk.isEmpty { break }
                    output.append(chunk)
                }
                outputEnded.signal()
            }.start()
        }

        deinit {
            if process.isRunning {
                process.signal(SIGKILL)
                process.wait()
            }
        }

        /// A line typed on the terminal.
        func type(_ line: String) { process.input?.write(Data((line + "\n").utf8)) }

        var text: String { output.text }

        /// The first capture group of `pattern` once the output has it.
        func wait(for pattern: String, timeout: TimeInterval = 20) throws -> String {
            let regex = try NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                let s = text
                if let m = regex.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)),
                    let r = Range(m.range(at: m.numberOfRanges > 1 ? 1 : 0), in: s)
                {
                    return String(s[r])
                }
                if !process.isRunning, text == s { break }
                Thread.sleep(forTimeInterval: 0.05)
            }
            throw CocoaError(
                .fileReadUnknown,
                userInfo: [NSLocalizedDescriptionKey: "no \(pattern) in: \(text) / \(stderr)"]
            )
        }

        var stderr: String {
            String(decoding: FileManager.default.contents(atPath: errURL.path) ?? Data(), as: UTF8.self)
        }

        func finish(timeout: TimeInterval = 30) -> (status: Int32, stdout: String, stderr: String) {
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning { process.signal(SIGKILL) }
            let status = process.wait()
            // The reader's last chunk: on a loaded machine its thread may not have run yet when the process
            // has exited (a fixed 50 ms wait once lost a whole "signed in as alice").
            _ = outputEnded.wait(timeout: .now() + 30)
            return (status, text, stderr)
        }
    }

    /// A server with alice registered and signed in (directory `alice`), and the directory she signs in
    /// from again (`laptop`).
    static func setUp(_ kind: String = "sqlite") throws -> (CLI, ServeTests.Server, Dir, Dir) {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        let server = try ServeTests.Server(database: db, in: t.dir)
        let alice = try registerAlice(t, server)
        try MessagingCLITests.login(alice, "alice", server)
        return (t, server, alice, Dir(t: t, name: "laptop"))
    }

    /// alice registered on `server` from directory `alice`, her password in the file `pw`.
    static func registerAlice(_ t: CLI, _ server: ServeTests.Server) throws -> Dir {
        try t.write("pw", Data("correct horse\n".utf8))
        let alice = Dir(t: t, name: "alice")
        let reg = try alice.cs(
            "account",
            "register",
            "alice",
            "--name",
            "Alice",
            "--lastname",
            "Liddell",
            "--password-file",
            t.path("pw"),
            "--server",
            server.url
        )
        try #require(reg.status == 0, "\(reg.stderr)")
        return alice
    }

    /// A pairing key from alice's account: (first line, URI line).
    static func pairingKey(_ alice: Dir) throws -> (key: String, uri: String) {
        let r = try alice.cs("account", "mfa", "pairing-key")
        try #require(r.status == 0, "\(r.stderr)")
        let lines = r.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        try #require(lines.count > 3, "\(r.text)")
        return (lines[0], lines[1])
    }

    static func pair(_ d: Dir, _ keyOrURI: String, server: ServeTests.Server) throws -> CLI.Output {
        try d.cs("authenticator", "pair", keyOrURI, "--name", d.name, "--server", server.url, "--no-passphrase")
    }

    static func login(_ d: Dir, _ server: ServeTests.Server, _ extra: String...) throws -> Running {
        try Running(
            d,
            ["account", "login", "alice", "--password-file", d.t.path("pw"), "--server", server.url] + extra
        )
    }

    /// The authenticator's pending requests, as `pending --json` prints them; waits until one is there.
    static func pending(_ phone: Dir) throws -> [[String: Any]] {
        for _ in 0..<100 {
            let rows = try phone.json("authenticator", "pending", "--json")
            if !rows.isEmpty { return rows }
            Thread.sleep(forTimeInterval: 0.1)
        }
        Issue.record("no pending request reached the authenticator")
        return []
    }

    /// `authenticator watch` on a terminal: each request shown as it arrives, answered by typing.
    @Test func watchAnswersFromTheTerminal() throws {
        let (t, server, alice, laptop) = try Self.setUp()
        defer { _ = server.signal(SIGTERM) }
        let phone = Dir(t: t, name: "phone")
        let (key, _) = try Self.pairingKey(alice)
        #expect(try Self.pair(phone, key, server: server).status == 0)
        let watch = try Running(phone, ["authenticator", "watch"], terminal: true)
        defer { watch.process.signal(SIGKILL) }
        _ = try watch.wait(for: "connected; waiting for sign-in requests for alice")

        let first = try Self.login(laptop, server)
        let number = try first.wait(for: "^Number to match: ([0-9]+)$")
        _ = try watch.wait(for: "Sign-in request .* alice .*from 127\\.0\\.0\\.1")
        _ = try watch.wait(for: "Type the number shown on the sign-in screen")
        watch.type(number)
        _ = try watch.wait(for: "^COMPLETED")
        let approved = first.finish()
        #expect(approved.status == 0 && approved.stdout.contains("signed in as alice"), "\(approved)")

        let second = try Self.login(laptop, server)
        _ = try second.wait(for: "^Number to match: ([0-9]+)$")
        _ = try watch.wait(for: "(?s)COMPLETED.*Type the number shown")
        watch.type("d")
        _ = try watch.wait(for: "^FAILED")
        let denied = second.finish()
        #expect(
            denied.status != 0 && denied.stderr.contains("sign-in FAILED") && denied.stderr.contains("denied"),
            "\(denied)"
        )
    }

    @Test(arguments: ServeTests.backends)
    func pushApprovalWrongNumberReportOTPAndPushOff(_ kind: String) throws {
        let (t, server, alice, laptop) = try Self.setUp(kind)
        defer { _ = server.signal(SIGTERM) }
        let phone = Dir(t: t, name: "phone")
        let (key, _) = try Self.pairingKey(alice)
        #expect(
            key.range(of: "^[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}$", options: .regularExpression)
                != nil,
            "\(key)"
        )
        let paired = try Self.pair(phone, key, server: server)
        #expect(
            paired.status == 0 && paired.text == "push: COMPLETED\noneTimePasscode: COMPLETED\nusername: alice\n",
            "\(paired.text) \(paired.stderr)"
        )
        #expect(MessagingCLITests.mode(phone.file("authenticator.json")) == 0o600)
        let keys = try FileManager.default.contentsOfDirectory(atPath: phone.file("keys"))
        #expect(keys.count == 1 && MessagingCLITests.mode(phone.file("keys/" + keys[0])) == 0o600)
        // The account's device list tells the authenticator from a messaging device.
        try MessagingCLITests.initDevice(alice, name: "alice-mail")
        let devices = try alice.json("device", "list", "--json")
        #expect(
            devices.map { $0["kind"] as? String ?? "" }.sorted() == ["authenticator", "messaging"]
                && devices.first { $0["kind"] as? String == "messaging" }?["name"] as? String == "alice-mail",
            "\(devices)"
        )
        let table = try alice.cs("device", "list").text.split(separator: "\n")
        #expect(
            table.first?.contains("KIND") == true && table.filter { $0.contains(" authenticator ") }.count == 1
                && table.filter { $0.contains(" messaging ") }.count == 1,
            "\(table)"
        )

        // Approved with the number: the waiting login finishes and keeps the session.
        let first = try Self.login(laptop, server)
        let number = try first.wait(for: "^Number to match: ([0-9]+)$")
        #expect(number.count == 2)
        let rows = try Self.pending(phone)
        let row = try #require(rows.first)
        #expect(
            rows.count == 1 && row["user"] as? String == "alice"
                && row["numberMatchingType"] as? String == "ENTER_MANUALLY"
        )
        #expect(
            row["address"] as? String == "127.0.0.1" && (row["userAgent"] as? String)?.isEmpty == false
                && row["time"] is String
        )
        #expect((row["options"] as? [String]) == [] && row["expiresAt"] is String)
        let id = try #require(row["id"] as? String)
        let approved = try phone.cs("authenticator", "approve", id, "--number", number)
        #expect(approved.status == 0 && approved.text == "COMPLETED\n", "\(approved.text) \(approved.stderr)")
        let done = first.finish()
        #expect(
            done.status == 0 && done.stdout.hasPrefix("Number to match: \(number)\nsigned in as alice until "),
            "\(done)"
        )
        #expect(try laptop.cs("account", "whoami").text.hasPrefix("alice "))
        #expect(try phone.json("authenticator", "pending", "--json").isEmpty, "answered requests are gone")

        // A wrong number fails the sign-in.
        let second = try Self.login(laptop, server)
        let shown = try second.wait(for: "^Number to match: ([0-9]+)$")
        let wrong = String(format: "%02d", (Int(shown)! + 1) % 100)
        let wrongAnswer = try phone.cs(
            "authenticator",
            "approve",
            try #require(Self.pending(phone).first?["id"] as? String),
            "--number",
            wrong
        )
        #expect(wrongAnswer.status != 0 && wrongAnswer.text == "FAILED\n", "\(wrongAnswer.text) \(wrongAnswer.stderr)")
        let failed = second.finish()
        #expect(
            failed.status != 0 && failed.stderr.contains("sign-in FAILED") && failed.stderr.contains("did not match"),
            "\(failed)"
        )
        // One message, one line (issue 19, 7: two messages once ran together).
        let errorLines = failed.stderr.split(separator: "\n").filter { $0.contains("did not match") }
        #expect(
            errorLines.count == 1 && errorLines[0].hasSuffix("sign in again and check the number")
                && !failed.stderr.contains("numberthe"),
            "\(failed.stderr)"
        )

        // "This wasn't me": FAILED, and the next sign-in offers no push (after a denial the number has 6 digits).
        let third = try Self.login(laptop, server)
        #expect(try third.wait(for: "^Number to match: ([0-9]+)$").count == 6)
        let denied = try phone.cs(
            "authenticator",
            "deny",
            try #require(Self.pending(phone).first?["id"] as? String),
            "--report"
        )
        #expect(denied.status == 0 && denied.text == "FAILED\n", "\(denied.text) \(denied.stderr)")
        let reported = third.finish()
        #expect(
            reported.status != 0 && reported.stderr.contains("sign-in FAILED")
                && reported.stderr.contains("this wasn't me"),
            "\(reported)"
        )
        let noPush = try Self.login(laptop, server).finish()
        #expect(
            noPush.status != 0 && !noPush.stdout.contains("Number to match") && noPush.stderr.contains("OTP_REQUIRED")
                && noPush.stderr.contains("--otp CODE"),
            "\(noPush)"
        )

        // The authenticator's own passcode signs in, once.
        let otp = try phone.cs("authenticator", "otp")
        let parts = otp.text.split(separator: " ")
        #expect(
            otp.status == 0 && parts.count == 2 && parts[0].count == 6
                && Int(parts[1].dropLast()).map { (1...30).contains($0) } == true,
            "\(otp.text)"
        )
        let code = String(parts[0])
        // On a terminal (script(1) gives it one): a live countdown redrawn in place every 100 ms, until Ctrl-C.
        // Interrupted after 6 s: on a loaded machine starting and unlocking the key alone took over a second.
        let live = try t.run(
            "/usr/bin/timeout",
            [
                "-s", "INT", "6", "/usr/bin/script", "-qfec",
                "COUNTERSIGN_CONFIG_DIR=\(phone.dir) \(CLI.binary) authenticator otp", "/dev/null",
            ]
        )
        let frames = live.text.split(separator: "\r").map {
            $0.replacingOccurrences(of: "\u{1b}[K", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        .filter { !$0.isEmpty }
        #expect(frames.count >= 5, "redrawn: \(frames)")
        #expect(
            frames.allSatisfy { f in
                let p = f.split(separator: " ", omittingEmptySubsequences: true)
                return p.count == 2 && p[0].count == 6 && p[0].allSatisfy(\.isNumber) && p[1].hasSuffix("s")
                    && Int(p[1].dropLast()).map { (1...30).contains($0) } == true
            },
            "\(frames)"
        )
        #expect(
            frames.contains { $0.hasPrefix(code) } || Int(parts[1].dropLast())! <= 2,
            "the same code as without a terminal: \(frames) vs \(code)"
        )
        let withOTP = try Self.login(laptop, server, "--otp", code).finish()
        #expect(withOTP.status == 0 && withOTP.stdout.hasPrefix("signed in as alice"), "\(withOTP)")
        let again = try Self.login(laptop, server, "--otp", code).finish()
        #expect(again.status != 0 && again.stderr.contains("not accepted"), "\(again)")

        // Push off on the authenticator: passcodes only (signing in with a code lifted the suspension first).
        let off = try phone.cs("authenticator", "push", "off")
        #expect(off.status == 0, "\(off.stderr)")
        let offLogin = try Self.login(laptop, server).finish()
        #expect(
            offLogin.status != 0 && !offLogin.stdout.contains("Number to match")
                && offLogin.stderr.contains("OTP_REQUIRED"),
            "\(offLogin)"
        )
        #expect(try phone.cs("authenticator", "push", "on").status == 0)
        let status = try alice.cs("account", "mfa", "status")
        #expect(
            status.text.contains("multi-factor sign-in: on") && status.text.contains("\"phone\"")
                && status.text.contains("push suspended: no"),
            "\(status.text)"
        )
    }

    @Test(arguments: ServeTests.backends)
    func authenticatorAppAndRecoveryCodes(_ kind: String) throws {
        let (t, server, alice, laptop) = try Self.setUp(kind)
        defer { _ = server.signal(SIGTERM) }
        #expect(try alice.cs("account", "mfa", "status").text.contains("multi-factor sign-in: off"))
        let enroll = try alice.cs("account", "mfa", "totp", "enroll")
        let uri = try #require(enroll.text.split(separator: "\n").first.map(String.init))
        #expect(
            enroll.status == 0 && uri.hasPrefix("otpauth://totp/Countersign:alice?"),
            "\(enroll.text) \(enroll.stderr)"
        )
        let secret = try #require(URLComponents(string: uri)?.queryItems?.first { $0.name == "secret" }?.value)
        let now = Int(Date().timeIntervalSince1970)
        func oathtool(_ at: Int) throws -> String {
            let r = try t.run("oathtool", ["--totp", "-b", secret, "-N", "@\(at)"])
            try #require(r.status == 0, "oathtool: \(r.stderr)")
            return r.text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let wrongConfirm = try alice.cs("account", "mfa", "totp", "confirm", "000000")
        #expect(wrongConfirm.status != 0 && wrongConfirm.stderr.contains("does not match"), "\(wrongConfirm.stderr)")
        let confirm = try alice.cs("account", "mfa", "totp", "confirm", try oathtool(now))
        #expect(confirm.status == 0, "\(confirm.stderr)")

        let codes = try alice.cs("account", "mfa", "recovery-codes")
        let lines = codes.text.split(separator: "\n").map(String.init)
        #expect(
            codes.status == 0 && lines.count == 10
                && lines.allSatisfy { $0.range(of: "^[2-9A-Z]{5}-[2-9A-Z]{5}$", options: .regularExpression) != nil },
            "\(codes.text)"
        )
        #expect(codes.stderr.contains("store these 10 recovery codes"), "\(codes.stderr)")

        // No authenticator: no push, the codes are named.
        let bare = try Self.login(laptop, server).finish()
        #expect(
            bare.status != 0 && bare.stderr.contains("OTP_REQUIRED") && bare.stderr.contains("--recovery-code"),
            "\(bare)"
        )
        // The app's next code (the current one confirmed the enrollment and is spent).
        let next = try oathtool(now + 30)
        let app = try Self.login(laptop, server, "--otp", next).finish()
        #expect(app.status == 0 && app.stdout.hasPrefix("signed in as alice"), "\(app)")
        #expect(try Self.login(laptop, server, "--otp", next).finish().status != 0, "a passcode works once")

        let recovery = try Self.login(laptop, server, "--recovery-code", lines[3].lowercased()).finish()
        #expect(recovery.status == 0 && recovery.stdout.hasPrefix("signed in as alice"), "\(recovery)")
        let reused = try Self.login(laptop, server, "--recovery-code", lines[3]).finish()
        #expect(reused.status != 0 && reused.stderr.contains("recovery code was not accepted"), "\(reused)")
        #expect(try alice.cs("account", "mfa", "status").text.contains("recovery codes left: 9"))

        let off = try alice.cs("account", "mfa", "disable")
        #expect(off.status == 0, "\(off.stderr)")
        let plain = try Self.login(laptop, server).finish()
        #expect(plain.status == 0 && plain.stdout.hasPrefix("signed in as alice"), "the password alone again: \(plain)")
    }

    @Test func qrSignInApprovedAndDenied() throws {
        let (t, server, alice, _) = try Self.setUp()
        defer { _ = server.signal(SIGTERM) }
        let phone = Dir(t: t, name: "phone")
        let (_, uri) = try Self.pairingKey(alice)
        #expect(uri.hasPrefix("countersign://pair?key="))
        #expect(try Self.pair(phone, uri, server: server).status == 0)

        let screen = Dir(t: t, name: "screen")
        let waiting = try Running(screen, ["account", "login", "--qr", "--server", server.url])
        let code = try waiting.wait(for: "\\A([^\\n]*)\\n")
        #expect(
            code.range(of: "^[2-9A-HJKMNP-Z]{8}$", options: .regularExpression) != nil,
            "the code alone on the first line: \(code)"
        )
        #expect(try waiting.wait(for: "^(countersign://auth\\?[^\\n]*)$").contains("authentication_code=\(code)"))
        let approved = try phone.cs("authenticator", "auth", code, "--approve", "alice")
        #expect(approved.status == 0 && approved.text == "COMPLETED\n", "\(approved.text) \(approved.stderr)")
        // Who asks, from where and when, is shown before the answer (issue 19, 4).
        #expect(
            approved.stderr.range(
                of: #"(?m)^sign-in request from 127\.0\.0\.1 \(.+\) at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"#
                    + #" for alice \(Alice Liddell\)$"#,
                options: .regularExpression
            ) != nil,
            "\(approved.stderr)"
        )
        let done = waiting.finish()
        #expect(done.status == 0 && done.stdout.contains("\nCOMPLETED\nsigned in as alice"), "\(done)")
        #expect(try screen.cs("account", "whoami").text.hasPrefix("alice "))

        let second = try Running(screen, ["account", "login", "--qr", "--server", server.url])
        let link = try second.wait(for: "^(countersign://auth\\?[^\\n]*)$")
        let denied = try phone.cs("authenticator", "auth", link, "--deny")
        #expect(denied.status == 0 && denied.text == "DENIED\n", "\(denied.text) \(denied.stderr)")
        let refused = second.finish()
        #expect(refused.status != 0 && refused.stdout.hasSuffix("\nDENIED\n"), "\(refused)")
        let late = try phone.cs("authenticator", "auth", link, "--approve", "alice")
        #expect(
            late.status != 0 && late.stderr.contains("authCodeInvalid"),
            "a finished code cannot be claimed again: \(late.stderr)"
        )
    }

    @Test func pairingRefusalsOneIdentityPerDirectoryOTPAndLogs() throws {
        let (t, server, alice, _) = try Self.setUp()
        defer { _ = server.signal(SIGTERM) }
        let (_, uri) = try Self.pairingKey(alice)
        let phone = Dir(t: t, name: "phone")
        let tablet = Dir(t: t, name: "tablet")
        let other = Dir(t: t, name: "other")
        #expect(try Self.pair(phone, uri, server: server).status == 0)
        // A used key and a wrong key: the same answer, and nothing left behind.
        let used = try Self.pair(tablet, uri, server: server)
        let wrong = try Self.pair(other, "ABCD-EFGH-JKMN", server: server)
        #expect(used.status != 0 && used.stderr.contains("pairing key is wrong, used or expired"), "\(used.stderr)")
        #expect(used.stderr == wrong.stderr && wrong.status == used.status)
        #expect(!FileManager.default.fileExists(atPath: tablet.file("authenticator.json")))
        #expect(
            ((try? FileManager.default.contentsOfDirectory(atPath: tablet.file("keys"))) ?? []).isEmpty,
            "the unused key is removed"
        )

        // One identity per config directory, either way round.
        let again = try Self.pair(phone, Self.pairingKey(alice).key, server: server)
        #expect(again.status != 0 && again.stderr.contains("already is authenticator"), "\(again.stderr)")
        let device = try phone.cs("device", "init", "--no-passphrase")  // refused before it looks for a session
        #expect(device.status != 0 && device.stderr.contains("is an authenticator"), "\(device.stderr)")
        try MessagingCLITests.initDevice(alice, name: "alice-laptop")
        let onDevice = try Self.pair(alice, Self.pairingKey(alice).key, server: server)
        #expect(onDevice.status != 0 && onDevice.stderr.contains("already is device"), "\(onDevice.stderr)")

        let otp = try phone.cs("authenticator", "otp")
        #expect(
            otp.status == 0 && otp.text.range(of: "^[0-9]{6} [0-9]{1,2}\n$", options: .regularExpression) != nil,
            "\(otp.text)"
        )
        let logs = try phone.cs("authenticator", "logs", "send")
        #expect(
            logs.status == 0 && logs.text.range(of: "^[2-9A-Z]{5}-[2-9A-Z]{5}\n$", options: .regularExpression) != nil,
            "\(logs.text) \(logs.stderr)"
        )
        #expect(try phone.json("authenticator", "pending", "--json").isEmpty)

        // SELECT_NUMBER: three options, one of them the number shown; another number is refused before it is sent.
        let settings = try alice.cs("account", "mfa", "settings", "--number-matching", "SELECT_NUMBER", "--digits", "6")
        #expect(
            settings.status == 0 && settings.text == "number matching: SELECT_NUMBER, 6 digits\n",
            "\(settings.text) \(settings.stderr)"
        )
        let laptop = Dir(t: t, name: "laptop")
        let waiting = try Self.login(laptop, server)
        let number = try waiting.wait(for: "^Number to match: ([0-9]+)$")
        let row = try #require(Self.pending(phone).first)
        let options = try #require(row["options"] as? [String])
        #expect(
            row["numberMatchingType"] as? String == "SELECT_NUMBER" && options.count == 3 && options.contains(number)
                && number.count == 6,
            "\(row)"
        )
        let id = try #require(row["id"] as? String)
        let notAnOption = try phone.cs("authenticator", "approve", id, "--number", "12")
        #expect(
            notAnOption.status != 0 && notAnOption.stderr.contains("not among this request's numbers"),
            "\(notAnOption.stderr)"
        )
        #expect(
            try phone.cs("authenticator", "approve", String(id.prefix(8)), "--number", number).text == "COMPLETED\n",
            "an ID prefix works"
        )
        #expect(waiting.finish().status == 0)

        // Turned off on the account: the authenticator is unpaired and says so.
        #expect(try alice.cs("account", "mfa", "disable").status == 0)
        let unpaired = try phone.cs("authenticator", "pending")
        #expect(unpaired.status != 0 && unpaired.stderr.contains("no longer paired"), "\(unpaired.stderr)")
    }
}
