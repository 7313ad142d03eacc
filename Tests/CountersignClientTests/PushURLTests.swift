import Foundation
import Testing

@testable import CountersignClient

/// The push channel's WebSocket URL: the server's host and port, never its user:password@ (the WebSocket
/// client's parser would take the user part for the host and send the push ticket there).
@Suite struct PushURLTests {
    @Test func userInfoIsDroppedAndTheSchemeFollowsTLS() throws {
        let plain = CountersignClient(
            server: try #require(URL(string: "http://evil.example:1@real.example:8080/x?y=1"))
        )
        #expect(plain.pushURL == "ws://real.example:8080/v1/push")
        let tls = CountersignClient(server: try #require(URL(string: "https://user:pass@auth.example.com")))
        #expect(tls.pushURL == "wss://auth.example.com/v1/push")
    }
}
