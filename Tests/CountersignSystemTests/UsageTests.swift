import CountersignTestSupport
import Foundation
import Testing

/// The part of CountersignCLITests/UsageTests.swift that needs a server.
@Suite struct UsageTests {
    typealias Dir = MessagingCLITests.Device

    /// A server named by an IPv6 address: the HTTP calls (AsyncHTTPClient) reach it, so registering,
    /// signing in and making a device work over [::1]; the push channel's WebSocket client cannot, and
    /// `watch` says why instead of retrying a host named "[" for ever.
    @Test func anIPv6ServerURLWorksAndWatchSaysWhyItCannot() throws {
        let t = try CLI()
        let server = try ServeTests.Server(
            database: "sqlite:" + t.path("v6.sqlite"),
            in: t.dir,
            arguments: ["--host", "::1"]
        )
        defer { _ = server.signal(SIGTERM) }
        #expect(server.url.hasPrefix("http://[::1]:"), "\(server.url)")
        let d = Dir(t: t, name: "d")
        try t.write("pw", Data("correct horse\n".utf8))
        let register = try d.cs(
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
        #expect(register.status == 0, "\(register.stderr)")
        let login = try d.cs("account", "login", "alice", "--password-file", t.path("pw"), "--server", server.url)
        #expect(login.status == 0 && login.text.hasPrefix("signed in as alice"), "\(login.text) \(login.stderr)")
        #expect(try d.cs("account", "whoami").text.contains("on \(server.url)"))
        let device = try d.cs("device", "init", "--name", "lap", "--no-passphrase")
        #expect(device.status == 0, "\(device.stderr)")
        let watch = try d.cs("watch")
        #expect(
            watch.status == 1 && watch.stderr.contains("IPv6 address") && watch.stderr.contains("WebSocket client")
                && watch.stderr.contains("localhost"),
            "\(watch.stderr)"
        )
    }
}
