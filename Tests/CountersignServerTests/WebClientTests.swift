import CountersignWebClient
import Foundation
import Testing

@testable import CountersignServer

/// The web client as the server ships it: its files come from the CountersignWebClient target's resource
/// (not the server's), every one is served at its path with its type, and index.html is the page at `/`.
struct WebClientTests {
    @Test func theWebClientTargetsFilesAreServed() throws {
        let client = try WebClient.shipped.get()
        let expected = [
            "/", "/app.css", "/js/main.js", "/js/events.js", "/js/screens/signin.js",
            "/js/authenticator/runtime.js", "/js/server/accounts.js", "/js/captcha-worker.js",
        ]
        for path in expected { #expect(client.files[path] != nil, "\(path) is not served") }
        #expect(client.files["/index.html"] == nil)
        #expect(client.files["/"]?.contentType == "text/html; charset=utf-8")
        #expect(client.files["/js/main.js"]?.contentType == "text/javascript; charset=utf-8")
        #expect(client.files["/app.css"]?.contentType == "text/css; charset=utf-8")
    }

    @Test func everyFileOfTheTargetsFolderIsServed() throws {
        let root = try #require(WebClientFiles.root)
        let client = try WebClient(directory: root)
        let walker = try #require(FileManager.default.enumerator(atPath: root.path))
        var count = 0
        for case let relative as String in walker {
            guard ["html", "css", "js"].contains(URL(fileURLWithPath: relative).pathExtension) else { continue }
            count += 1
            #expect(client.files[relative == "index.html" ? "/" : "/" + relative] != nil, "\(relative)")
        }
        #expect(count >= 60)
    }
}
