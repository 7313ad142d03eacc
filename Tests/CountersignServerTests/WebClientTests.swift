import CountersignWebClient
import Crypto
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

    /// The page names its files by versioned URLs and maps every module to its versioned URL, and its policy
    /// allows that import map by its hash and no other inline script; the other files keep the common policy.
    @Test func thePageNamesItsFilesByVersionAndItsPolicyAllowsOnlyItsImportMap() throws {
        let client = try WebClient.shipped.get()
        let page = try #require(client.files["/"])
        let html = try #require(page.bytes.getString(at: 0, length: page.bytes.readableBytes))
        let main = try #require(client.files["/js/main.js"])
        #expect(html.contains("src=\"/js/main.js?v=\(main.version)\""))
        #expect(!html.contains("src=\"/js/main.js\""))
        let css = try #require(client.files["/app.css"])
        #expect(html.contains("href=\"/app.css?v=\(css.version)\""))
        let start = try #require(html.range(of: "<script type=\"importmap\">")?.upperBound)
        let end = try #require(html.range(of: "</script>", range: start..<html.endIndex)?.lowerBound)
        let map = String(html[start..<end])
        let imports = try #require(
            (try JSONSerialization.jsonObject(with: Data(map.utf8)) as? [String: [String: String]])?["imports"]
        )
        let modules = client.files.keys.filter { $0.hasPrefix("/js/") && $0.hasSuffix(".js") }
        #expect(Set(imports.keys) == Set(modules))
        for (path, url) in imports { #expect(url == "\(path)?v=\(client.files[path]!.version)") }
        // Before any module is asked for, or the browser ignores the map.
        let firstModule = try #require(html.range(of: "<script type=\"module\"")?.lowerBound)
        #expect(start < firstModule)
        let hash = Data(SHA256.hash(data: Data(map.utf8))).base64EncodedString()
        #expect(page.contentSecurityPolicy == WebClient.policy(scripts: "'self' 'sha256-\(hash)'"))
        #expect(main.contentSecurityPolicy == nil)
        // The page is revalidated whatever its URL says; the files it names may be kept by version.
        #expect(!page.keptByVersion && main.keptByVersion)
        // The page is revalidated whatever its URL says; the files it names may be kept by version.
        #expect(!page.keptByVersion && main.keptByVersion)
        #expect(main.version.count == 32 && main.version.allSatisfy(\.isHexDigit))
    }
}
