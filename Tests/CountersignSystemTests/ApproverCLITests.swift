import CountersignTestSupport
import Foundation
import Testing

/// The paired authenticator approving a new device from the CLI (docs/PROTOCOL.md §1.2): `countersign
/// authenticator status` shows its code, `countersign device endorse` on the laptop compares it and endorses,
/// `countersign authenticator approve-device` links the tablet, and a contact who pinned the laptop follows
/// the tablet with a calm notice naming the authenticator. Before the endorsement, and with a wrong code,
/// nothing is approved.
@Suite struct ApproverCLITests {
    typealias Dir = MessagingCLITests.Device

    // Added as `device init` adds it, but its sign-in finished with the authenticator's passcode (pairing turned
    // on the second factor).
    static func tablet(_ t: CLI, _ phone: Dir, server: ServeTests.Server) throws -> Dir {
        let tablet = Dir(t: t, name: "bob3")
        let otp = String(try phone.cs("authenticator", "otp").text.prefix(6))  // "123456 17": the code, its seconds
        let r = try tablet.cs(
            "account",
            "login",
            "bob",
            "--password-file",
            t.path("pw"),
            "--server",
            server.url,
            "--otp",
            otp
        )
        try #require(r.status == 0, "\(r.stderr)")
        try MessagingCLITests.initDevice(tablet, name: "bob-tablet")
        return tablet
    }

    /// The value of the line starting with `prefix` in `text`.
    static func line(_ prefix: String, in text: String) throws -> String {
        try #require(
            text.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) },
            "no \(prefix) in \(text)"
        )
    }

    @Test func anEndorsedAuthenticatorLinksATabletAndAContactFollowsIt() throws {
        let (t, server, users) = try MessagingCLITests.setUp(["alice", "bob"])
        _ = server  // stopped when it goes (deinit)
        let alice = try #require(users["alice"])
        let bob = try #require(users["bob"])
        _ = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "hello"))

        let phone = Dir(t: t, name: "bob-phone")
        let paired = try MFACLITests.pair(phone, try MFACLITests.pairingKey(bob).key, server: server)
        try #require(paired.status == 0, "\(paired.stderr)")
        let status = try phone.cs("authenticator", "status")
        #expect(status.text.contains("approves no devices yet"), "\(status.text)")
        let approverCode = try Self.line("code ", in: status.text)

        let tablet = try Self.tablet(t, phone, server: server)
        let linkCode = try Self.line("Link code: ", in: try tablet.cs("device", "link", "--wait", "0").text)

        // Not endorsed: the authenticator approves nothing, and says what to run.
        let early = try phone.cs("authenticator", "approve-device", "--code", linkCode, "--yes")
        #expect(early.status != 0 && early.stderr.contains("device endorse"), "\(early.stderr)")
        // A wrong code endorses nothing; the right one does, and the list says so.
        let wrong = try bob.cs("device", "endorse", "--code", "0000 0000 0000 0000 0000 0000", "--yes")
        #expect(wrong.status != 0 && wrong.stderr.contains("REFUSED"), "\(wrong.stderr)")
        let endorsed = try bob.cs("device", "endorse", "--code", approverCode, "--yes")
        #expect(
            endorsed.status == 0 && endorsed.text.contains("allowed \"bob-phone\""),
            "\(endorsed.text) \(endorsed.stderr)"
        )
        let list = try bob.cs("device", "list").text
        #expect(
            list.split(separator: "\n").contains {
                $0.contains("bob-phone") && $0.contains("(approves new devices; allowed by bob-laptop)")
            },
            "\(list)"
        )
        #expect(
            try phone.cs("authenticator", "status").text.contains("approves new devices (allowed by \"bob-laptop\")")
        )

        // The authenticator approves the tablet (a wrong code approves nothing); alice follows it calmly.
        let mistaken = try phone.cs(
            "authenticator",
            "approve-device",
            "--code",
            "0000 0000 0000 0000 0000 0000",
            "--yes"
        )
        #expect(mistaken.status != 0 && mistaken.stderr.contains("REFUSED"), "\(mistaken.stderr)")
        let piped = try phone.cs("authenticator", "approve-device", "--code", linkCode)
        #expect(piped.status != 0 && piped.stderr.contains("the code the new device shows"), "\(piped.stderr)")
        let approved = try phone.cs("authenticator", "approve-device", "--code", linkCode, "--yes")
        #expect(approved.status == 0 && approved.text.contains("approved \"bob-tablet\""), "\(approved.stderr)")
        let linked = try tablet.cs("device", "link", "--wait", "0")
        #expect(linked.text.contains("linked already (approved by \"bob-phone\")"), "\(linked.text)")
        // Approving it again: said to be done, not refused as if the server had swapped keys.
        let again = try phone.cs("authenticator", "approve-device", "--code", linkCode, "--yes")
        #expect(again.status == 0 && again.text.contains("is linked already"), "\(again.text) \(again.stderr)")
        let followed = try alice.cs("send", "--to", "bob", "to the tablet too")
        #expect(
            followed.status == 0 && followed.stderr.contains("bob linked a new device, \"bob-tablet\"")
                && followed.stderr.contains("bob-phone"),
            "\(followed.stderr)"
        )
    }
}
