import CountersignTestSupport
import Foundation
import Testing

/// `countersign device|send|inbox|outbox|read|contacts|trust|safety-number` against a real `countersign
/// serve`, as people on one machine run them: one config directory each (COUNTERSIGN_CONFIG_DIR, passed
/// per run, never set process-wide, because tests run in parallel).
@Suite struct MessagingCLITests {
    /// One config directory: a user's device (shared with CountersignCLITests).
    typealias Device = DeviceDirectory

    /// A server, and `users` registered and signed in, each with a device in a config directory of its own
    /// (`alice`, `bob`, …). Devices use --no-passphrase unless named in `passphrase` (then "pass" file).
    static func setUp(
        _ users: [String],
        passphrase: Set<String> = [],
        serverEnvironment: [String: String] = [:],
        serverArguments: [String] = [],
        serverLog: String? = nil
    ) throws -> (CLI, ServeTests.Server, [String: Device]) {
        let t = try CLI()
        let server = try ServeTests.Server(
            database: "sqlite:" + t.path("m.sqlite"),
            in: t.dir,
            captcha: "off",
            environment: serverEnvironment,
            arguments: serverArguments,
            log: serverLog.map { t.path($0) }
        )
        try t.write("pw", Data("correct horse\n".utf8))
        try t.write("pass", Data("device pass\n".utf8))
        var devices: [String: Device] = [:]
        for user in users {
            let d = Device(t: t, name: user)
            let reg = try d.cs(
                "account",
                "register",
                user,
                "--name",
                "N",
                "--lastname",
                "L",
                "--password-file",
                t.path("pw"),
                "--server",
                server.url
            )
            try #require(reg.status == 0, "\(reg.stderr)")
            try login(d, user, server)
            try initDevice(d, name: "\(user)-laptop", passphrase: passphrase.contains(user))
            devices[user] = d
        }
        return (t, server, devices)
    }

    static func login(_ d: Device, _ user: String, _ server: ServeTests.Server) throws {
        let r = try d.cs("account", "login", user, "--password-file", d.t.path("pw"), "--server", server.url)
        try #require(r.status == 0, "\(r.stderr)")
    }

    static func initDevice(_ d: Device, name: String, passphrase: Bool = false) throws {
        let r =
            passphrase
            ? try d.cs("device", "init", "--name", name, "--passphrase-file", d.t.path("pass"))
            : try d.cs("device", "init", "--name", name, "--no-passphrase")
        try #require(r.status == 0, "\(r.stderr)")
        #expect(r.text.contains("registered device"), "\(r.text)")
    }

    /// The 32-hex message ID a `send` printed.
    static func sentID(_ r: CLI.Output) throws -> String {
        try #require(r.status == 0, "send failed: \(r.stderr)")
        let range = try #require(r.text.range(of: "[0-9a-f]{32}", options: .regularExpression), "\(r.text)")
        return String(r.text[range])
    }

    static func mode(_ path: String) -> mode_t {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o777 : 0
    }

    /// Fingerprints (`xxxxxxxx:xxxxxxxx:xxxxxxxx:xxxxxxxx`) in a text.
    static func fingerprints(_ text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: "[0-9a-f]{8}(:[0-9a-f]{8}){3}")
        return Set(
            regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
                String(text[Range($0.range, in: text)!])
            }
        )
    }

    @Test func twoUsersOnOneMachineSendFetchAndRead() throws {
        let (t, server, d) = try Self.setUp(["alice", "bob"], passphrase: ["bob"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let bob = d["bob"]!
        // Bob's second device: another directory, signed in to the same account.
        let bob2 = Device(t: t, name: "bob2")
        try Self.login(bob2, "bob", server)
        try Self.initDevice(bob2, name: "bob-phone")
        #expect(Self.mode(bob.file("device.json")) == 0o600 && Self.mode(bob.file("device-session.json")) == 0o600)
        #expect(Self.mode(bob.file("keys")) == 0o700 && Self.mode(bob.dir) == 0o700)
        let keys = try FileManager.default.contentsOfDirectory(atPath: bob.file("keys"))
        #expect(keys.count == 1 && Self.mode(bob.file("keys/" + keys[0])) == 0o600)
        #expect(
            String(decoding: FileManager.default.contents(atPath: bob.file("keys/" + keys[0])) ?? Data(), as: UTF8.self)
                .hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"),
            "the key is encrypted PKCS#8"
        )

        let list = try bob.cs("device", "list")
        #expect(
            list.status == 0 && list.text.contains("bob-laptop") && list.text.contains("bob-phone"),
            "\(list.stderr)"
        )
        #expect(
            list.text.split(separator: "\n").contains {
                $0.hasPrefix("* ") && $0.contains("bob-laptop") && $0.contains("(this device)")
            }
        )

        // The first message pins bob's two devices, and says so.
        let sent = try alice.cs("send", "--to", "bob", "--verbose", "hello bob ✓")
        let id = try Self.sentID(sent)
        #expect(sent.stderr.contains("first message to bob: pinned 2 devices"), "\(sent.stderr)")
        #expect(sent.stderr.contains("String signed"), "PingIdentity labels with --verbose: \(sent.stderr)")
        #expect(
            sent.stderr.components(separatedBy: "Keypair created").count == 2,
            "said once per message, not once per recipient device: \(sent.stderr)"
        )
        #expect(sent.text.contains("(2 devices)") && sent.text.contains("delivered now"), "\(sent.text)")
        // Text from standard input too.
        let piped = try Self.sentID(try alice.cs("send", "--to", "bob", stdin: Data("second, from stdin\n".utf8)))

        for device in [bob, bob2] {
            let inbox = try device.cs("inbox", "--passphrase-file", t.path("pass"))
            #expect(
                inbox.status == 0 && inbox.text.contains(id) && inbox.text.contains(piped)
                    && inbox.text.contains("unread"),
                "\(inbox.stderr)"
            )
            #expect(inbox.stderr.contains("2 new messages"), "\(inbox.stderr)")
        }
        // Stored sealed, privately; never the plaintext.
        let stored = bob.file("messages/\(id).json")
        #expect(Self.mode(stored) == 0o600 && Self.mode(bob.file("messages")) == 0o700)
        let storedText = String(decoding: FileManager.default.contents(atPath: stored) ?? Data(), as: UTF8.self)
        #expect(storedText.contains("\"envelope\"") && !storedText.contains("hello bob"))

        let read = try bob.cs("read", id, "--verbose", "--passphrase-file", t.path("pass"))
        #expect(read.status == 0 && read.text == "hello bob ✓", "byte for byte into a pipe: \(read.stderr)")
        // On a terminal the prompt after it starts on a line of its own.
        let shown = try t.run(
            "/usr/bin/script",
            [
                "-qfec",
                "COUNTERSIGN_CONFIG_DIR=\(bob.dir) \(CLI.binary) read \(id) --passphrase-file \(t.path("pass"))",
                "/dev/null",
            ]
        )
        #expect(shown.status == 0 && shown.text.hasSuffix("hello bob ✓\r\n"), "\(shown.text.debugDescription)")
        let steps = read.stderr.split(separator: "\n").map(String.init)
        #expect(
            steps.first?.hasPrefix("first message from alice: pinned 1 device") == true,
            "trust on first use: \(read.stderr)"
        )
        #expect(Array(steps.dropFirst().prefix(2)) == ["Signature verified", "String decrypted"], "\(read.stderr)")
        #expect(read.stderr.contains("from: alice"))
        let prefix = try bob2.cs("read", String(piped.prefix(8)))
        #expect(prefix.status == 0 && prefix.text == "second, from stdin\n", "an ID prefix works: \(prefix.stderr)")

        // --json: one array; the read flag is this device's own.
        let rows = try bob.json("inbox", "--json")
        #expect(rows.count == 2)
        let row = try #require(rows.first { $0["id"] as? String == id })
        #expect(
            row["direction"] as? String == "incoming" && row["peer"] as? String == "alice"
                && row["read"] as? Bool == true
        )
        #expect((row["sentAt"] as? String).map { ISO8601DateFormatter().date(from: $0) != nil } == true)
        #expect(row["acceptedAt"] is String)
        #expect(try bob2.json("inbox", "--json").first { $0["id"] as? String == id }?["read"] as? Bool == false)

        // Fetching again duplicates nothing.
        let again = try bob.cs("inbox")
        #expect(
            again.status == 0 && again.stderr.contains("no new messages")
                && again.text.split(separator: "\n").count == 2,
            "\(again.text)"
        )

        // Alice's outbox: the copy queued to her own device, with receipts (both of bob's devices stored it).
        let outbox = try alice.json("outbox", "--json")
        let out = try #require(outbox.first { $0["id"] as? String == id }, "\(outbox)")
        #expect(out["direction"] as? String == "outgoing" && out["peer"] as? String == "bob")
        let receipts = try #require(out["receipts"] as? [String: Any])
        #expect(receipts["recipientDevices"] as? Int == 2 && receipts["acknowledgedBy"] as? Int == 2, "\(receipts)")
        let outText = try alice.cs("outbox")
        #expect(
            outText.status == 0 && outText.text.contains(id) && outText.text.contains("stored 2/2"),
            "\(outText.text)"
        )
        let own = try alice.cs("read", id)
        #expect(
            own.status == 0 && own.text == "hello bob ✓",
            "the sender's own devices can read what it sent: \(own.stderr)"
        )
        #expect(try alice.json("inbox", "--json").isEmpty, "outgoing copies are not in the inbox")

        // Contacts and safety numbers.
        let contacts = try alice.cs("contacts")
        #expect(contacts.status == 0 && contacts.text.contains("bob: 2 devices"), "\(contacts.text)")
        let a = try alice.cs("safety-number", "bob")
        let b = try bob2.cs("safety-number", "alice")
        #expect(a.status == 0 && a.text == b.text, "\(a.stderr) \(b.stderr)")
        #expect(a.text.range(of: "^([0-9]{5} ){11}[0-9]{5}\n$", options: .regularExpression) != nil, "\(a.text)")
    }

    @Test func delayedDeliveryArrivesLater() throws {
        let (_, server, d) = try Self.setUp(["alice", "bob"])
        defer { _ = server.signal(SIGTERM) }
        let sent = try d["alice"]!.cs("send", "--to", "bob", "--after", "2s", "later")
        let id = try Self.sentID(sent)
        #expect(sent.text.contains("delivered at"), "\(sent.text)")
        let early = try d["bob"]!.cs("inbox")
        #expect(early.status == 0 && !early.text.contains(id), "not before its time: \(early.text)")
        let pending = try d["alice"]!.cs("outbox")
        #expect(pending.text.contains(id) && pending.text.contains("due "), "\(pending.text)")
        var arrived = false
        for _ in 0..<30 where !arrived {
            Thread.sleep(forTimeInterval: 0.25)
            arrived = try d["bob"]!.cs("inbox").text.contains(id)
        }
        #expect(arrived)
        #expect(try d["bob"]!.cs("read", id).text == "later")
        for bad in ["31d", "5x", "1.5h", "2w"] {
            let r = try d["alice"]!.cs("send", "--to", "bob", "--after", bad, "x")
            #expect(
                r.status != 0 && r.stderr.contains("--after takes a duration from 0 to 30 days"),
                "\(bad): \(r.stderr)"
            )
        }
    }

    @Test func rotationNewDevicesAndRevocationNeedTrust() throws {
        let (t, server, d) = try Self.setUp(["alice", "bob"], passphrase: ["bob"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let bob = d["bob"]!
        let pass = ["--passphrase-file", t.path("pass")]
        let before = try Self.sentID(try alice.cs("send", "--to", "bob", "before the rotation"))
        _ = try bob.cs(["inbox"] + pass)

        // Bob rotates: the old key stays in the keyring, so the older message still opens.
        let rotate = try bob.cs(["device", "rotate"] + pass)
        #expect(rotate.status == 0 && rotate.text.contains(" -> "), "\(rotate.stderr)")
        let rotated = Self.fingerprints(rotate.text)
        #expect(rotated.count == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: bob.file("keys")).count == 2)
        let old = try bob.cs(["read", before] + pass)
        #expect(old.status == 0 && old.text == "before the rotation", "\(old.stderr)")

        // Alice pinned the old key, and the old key signed the rotation: followed, said with both
        // fingerprints, and the message goes to the new key.
        let following = try alice.cs("send", "--to", "bob", "after the rotation")
        let after = try Self.sentID(following)
        #expect(
            following.stderr.contains("rotated its key") && following.stderr.contains("signed by the key you pinned"),
            "\(following.stderr)"
        )
        #expect(
            rotated.isSubset(of: Self.fingerprints(following.stderr)),
            "names the old and new fingerprints: \(following.stderr)"
        )
        #expect(try alice.cs("trust", "bob").text.contains("unchanged"))
        #expect(try alice.cs("contacts").text.contains("1 earlier key"))
        _ = try bob.cs(["inbox"] + pass)
        #expect(try bob.cs(["read", after] + pass).text == "after the rotation")
        #expect(try bob.cs(["read", before] + pass).text == "before the rotation")

        // A device added to bob's account (by bob, or by a server slipping in a key) is refused until trusted.
        let bob2 = Device(t: t, name: "bob2")
        try Self.login(bob2, "bob", server)
        try Self.initDevice(bob2, name: "bob-phone")
        let newKey = try #require(
            Self.fingerprints(
                try bob2.cs("device", "list").text.split(separator: "\n").first { $0.contains("(this device)") }.map(
                    String.init
                ) ?? ""
            ).first
        )
        let added = try alice.cs("send", "--to", "bob", "hi")
        #expect(added.status != 0 && added.stderr.contains("added") && added.stderr.contains(newKey), "\(added.stderr)")
        #expect(try alice.cs("trust", "bob").text.contains(newKey))
        _ = try Self.sentID(try alice.cs("send", "--to", "bob", "to both"))
        // Bob's own account: his first device pinned none other when... it never sent; now it pins bob-phone.
        let fromBob = try bob.cs(["send", "--to", "alice", "reply"] + pass)
        #expect(
            fromBob.status == 0 && fromBob.stderr.contains("pinned your account's 1 other device"),
            "\(fromBob.stderr)"
        )

        // Bob revokes his phone from the laptop: alice follows (no longer sealed to it, said calmly), the phone
        // finds out and clears itself.
        let phoneID = try #require(bob2.deviceID)
        let revoke = try bob.cs("device", "revoke", phoneID)
        #expect(revoke.status == 0, "\(revoke.stderr)")
        let removed = try alice.cs("send", "--to", "bob", "hi")
        #expect(
            removed.status == 0 && removed.stderr.contains("bob removed the device") && removed.stderr.contains(newKey)
                && removed.stderr.contains("safety number changed"),
            "\(removed.stderr)"
        )

        // Bob links a tablet, approving it from the laptop after comparing the code: alice follows it with a
        // notice and is not refused; a wrong code approves nothing.
        let tablet = Device(t: t, name: "bob3")
        try Self.login(tablet, "bob", server)
        try Self.initDevice(tablet, name: "bob-tablet")
        let shown = try tablet.cs("device", "link", "--wait", "0")
        let code = try #require(
            shown.text.split(separator: "\n").first { $0.hasPrefix("Link code: ") }.map { String($0.dropFirst(11)) },
            "\(shown.text) \(shown.stderr)"
        )
        let wrong = try bob.cs(["device", "approve", "--code", "0000 0000 0000 0000 0000 0000", "--yes"] + pass)
        #expect(wrong.status != 0 && wrong.stderr.contains("REFUSED"), "\(wrong.stderr)")
        let approved = try bob.cs(["device", "approve", "--code", code, "--yes"] + pass)
        #expect(approved.status == 0 && approved.text.contains("bob-tablet"), "\(approved.text) \(approved.stderr)")
        // What bob's laptop approved is in its own pins at once (never "compare with yourself" later).
        let own = try bob.cs("contacts").text
        #expect(own.contains("bob-tablet"), "\(own)")
        let list = try bob.cs("device", "list").text
        #expect(
            list.split(separator: "\n").contains { $0.contains("bob-tablet") && $0.contains("(approved by ") },
            "\(list)"
        )
        let linked = try tablet.cs("device", "link", "--wait", "0")
        #expect(linked.status == 0 && linked.text.contains("linked already"), "\(linked.text)")
        let followed = try alice.cs("send", "--to", "bob", "to the tablet too")
        #expect(
            followed.status == 0 && followed.stderr.contains("bob linked a new device, \"bob-tablet\""),
            "\(followed.stderr)"
        )
        // A device bob never approved writes to alice: its message is not refused but named as from bob's new,
        // unverified device; into a pipe (as here) only with --allow-unverified.
        let rogue = Device(t: t, name: "bob5")
        try Self.login(rogue, "bob", server)
        try Self.initDevice(rogue, name: "bob-rogue")
        let rogueID = try Self.sentID(try rogue.cs("send", "--to", "alice", "from a device bob never approved"))
        _ = try alice.cs("inbox")
        let piped = try alice.cs("read", rogueID)
        #expect(
            piped.status != 0 && piped.stderr.contains("REFUSED") && piped.stderr.contains("unverified device")
                && piped.text.isEmpty,
            "\(piped.text) \(piped.stderr)"
        )
        let allowed = try alice.cs("read", rogueID, "--allow-unverified")
        #expect(
            allowed.status == 0 && allowed.text == "from a device bob never approved"
                && allowed.stderr.contains("bob's new, unverified device"),
            "\(allowed.text) \(allowed.stderr)"
        )
        // Marked verified only over the devices compared: while bob lists a device alice never pinned (the
        // rogue), nothing is marked; a number that is not the one now, or none into a pipe, marks nothing.
        let early = try alice.cs("verify", "bob", "--number", String(repeating: "1", count: 60))
        #expect(
            early.status != 0 && early.stderr.contains("differ from the ones you pinned"),
            "\(early.stderr)"
        )
        #expect(try alice.cs("trust", "bob").status == 0)
        let mismatched = try alice.cs("verify", "bob", "--number", String(repeating: "1", count: 60))
        #expect(mismatched.status != 0 && mismatched.stderr.contains("not the safety number"), "\(mismatched.stderr)")
        let unsaid = try alice.cs("verify", "bob")
        #expect(unsaid.status != 0 && unsaid.stderr.contains("--number"), "\(unsaid.stderr)")
        #expect(!(try alice.cs("contacts").text.contains(", verified ")))
        // Marked verified, alice follows nothing: a new link waits for her.
        let number = try alice.cs("safety-number", "bob").text
        let marked = try alice.cs("verify", "bob", "--number", number)
        #expect(marked.status == 0 && marked.text.contains("marked verified"), "\(marked.stderr)")
        let desk = Device(t: t, name: "bob4")
        try Self.login(desk, "bob", server)
        try Self.initDevice(desk, name: "bob-desk")
        let deskCode = try #require(
            try desk.cs("device", "link", "--wait", "0").text.split(separator: "\n").first {
                $0.hasPrefix("Link code: ")
            }
            .map { String($0.dropFirst(11)) }
        )
        #expect(try bob.cs(["device", "approve", "--code", deskCode, "--yes"] + pass).status == 0)
        let blocked = try alice.cs("send", "--to", "bob", "verified")
        #expect(blocked.status != 0 && blocked.stderr.contains("added"), "\(blocked.stderr)")
        let gone = try bob2.cs("inbox")
        #expect(
            gone.status != 0 && gone.stderr.contains("has been revoked")
                && gone.stderr.contains("countersign device init"),
            "\(gone.stderr)"
        )
        #expect(bob2.revoked)
        // Revoking this very device marks it here too.
        let laptopID = try #require(bob.deviceID)
        let self_ = try bob.cs("device", "revoke", laptopID)
        #expect(self_.status == 0 && self_.text.contains("that was this device"), "\(self_.stderr)")
        #expect(bob.revoked && !FileManager.default.fileExists(atPath: bob.file("device-session.json")))
        let unknown = try bob.cs("device", "revoke", "no-such-device")
        #expect(unknown.status != 0 && unknown.stderr.contains("no active device no-such-device"), "\(unknown.stderr)")
    }

    @Test func clearErrors() throws {
        let (t, server, d) = try Self.setUp(["alice", "bob"], passphrase: ["bob"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let bob = d["bob"]!
        let nobody = Device(t: t, name: "nobody")
        let notIn = try nobody.cs("device", "init", "--no-passphrase")
        #expect(notIn.status != 0 && notIn.stderr.contains("countersign account login"), "\(notIn.stderr)")
        for args in [["send", "--to", "bob", "hi"], ["inbox"], ["outbox"], ["read", "0123abcd"], ["trust", "bob"]] {
            let r = try nobody.cs(args)
            #expect(r.status != 0 && r.stderr.contains("countersign device init"), "\(args): \(r.stderr)")
        }
        // Signed in, no device yet.
        try Self.login(nobody, "alice", server)
        let noDevice = try nobody.cs("send", "--to", "bob", "hi")
        #expect(
            noDevice.status != 0 && noDevice.stderr.contains("signed in as alice, run `countersign device init`"),
            "\(noDevice.stderr)"
        )
        let twice = try alice.cs("device", "init", "--no-passphrase")
        #expect(twice.status != 0 && twice.stderr.contains("already is device"), "\(twice.stderr)")

        let id = try Self.sentID(try alice.cs("send", "--to", "bob", "secret"))
        try t.write("wrong", Data("not it\n".utf8))
        #expect(try bob.cs("inbox", "--passphrase-file", t.path("pass")).status == 0)
        let wrong = try bob.cs("read", id, "--passphrase-file", t.path("wrong"))
        #expect(wrong.status != 0 && wrong.stderr.contains("wrong passphrase") && wrong.text.isEmpty, "\(wrong.stderr)")
        #expect(try bob.json("inbox", "--json").first?["read"] as? Bool == false, "a failed read leaves it unread")
        let noTerminal = try t.run(
            "/usr/bin/env",
            ["COUNTERSIGN_CONFIG_DIR=\(bob.dir)", "/usr/bin/setsid", "-w", CLI.binary, "read", id]
        )
        #expect(noTerminal.status != 0 && noTerminal.stderr.contains("--passphrase-file"), "\(noTerminal.stderr)")
        // A device session the server no longer accepts is renewed by signing a nonce (the key is unlocked for it).
        let sessionFile = bob.file("device-session.json")
        let bogus =
            "{\"deviceId\": \"\(try #require(bob.deviceID))\", \"token\": \"csd_bogus\", \"expiresAt\": \"2099-01-01T00:00:00Z\"}"
        try Data(bogus.utf8).write(to: URL(fileURLWithPath: sessionFile))
        let locked = try t.run(
            "/usr/bin/env",
            ["COUNTERSIGN_CONFIG_DIR=\(bob.dir)", "/usr/bin/setsid", "-w", CLI.binary, "inbox"]
        )
        #expect(
            locked.status != 0 && locked.stderr.contains("--passphrase-file"),
            "renewal needs the key: \(locked.stderr)"
        )
        let renewed = try bob.cs("inbox", "--passphrase-file", t.path("pass"))
        #expect(renewed.status == 0 && renewed.text.contains(id), "\(renewed.stderr)")
        let newSession = String(decoding: FileManager.default.contents(atPath: sessionFile) ?? Data(), as: UTF8.self)
        #expect(newSession.contains("csd_") && !newSession.contains("csd_bogus") && Self.mode(sessionFile) == 0o600)

        let unknown = try bob.cs("read", "0123456789abcdef0123456789abcdef", "--passphrase-file", t.path("pass"))
        #expect(
            unknown.status != 0 && unknown.stderr.contains("no message 0123456789abcdef0123456789abcdef")
                && unknown.stderr.contains("countersign inbox")
        )
        let notID = try bob.cs("read", "../device")
        #expect(notID.status != 0 && notID.stderr.contains("is not a message ID"))
        let nobodyThere = try alice.cs("send", "--to", "bob", "--to", "carol", "hi")
        #expect(
            nobodyThere.status != 0 && nobodyThere.stderr.contains("there is no user carol"),
            "\(nobodyThere.stderr)"
        )
        let tooBig = try alice.cs("send", "--to", "bob", stdin: Data(repeating: 0x61, count: (1 << 20) + 1))
        #expect(tooBig.status != 0 && tooBig.stderr.contains("over 1 MiB"), "\(tooBig.stderr)")
        let noRecipient = try alice.cs("send", "hi")
        #expect(noRecipient.status != 0 && noRecipient.stderr.contains("--to USER"))
        #expect(try alice.cs("safety-number", "carol").stderr.contains("no user carol"))
        // A stored message whose claimed sender holds no key that signed it is refused before decrypting.
        let storedURL = URL(fileURLWithPath: bob.file("messages/\(id).json"))
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: storedURL)) as? [String: Any])
        object["from"] = "bob"
        try JSONSerialization.data(withJSONObject: object).write(to: storedURL)
        let forged = try bob.cs("read", id, "--passphrase-file", t.path("pass"), "--verbose")
        #expect(
            forged.status != 0 && forged.stderr.contains("REFUSED")
                && forged.stderr.contains("not a key you pinned for bob"),
            "\(forged.stderr)"
        )
        #expect(!forged.stderr.contains("String decrypted") && forged.text.isEmpty)
        // Nothing half-written was left in the config directories.
        for dir in [alice.dir, bob.dir, bob.file("messages"), bob.file("keys")] {
            let names = try FileManager.default.contentsOfDirectory(atPath: dir)
            #expect(!names.contains { $0.hasPrefix(".") }, "\(dir): \(names)")
        }
    }
}
