import CountersignWebClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The web client's files (the `CountersignWebClient` target's `web/`: HTML, CSS and ES modules, no build
/// step), read once at start and served from memory at `/` with the same security headers on every file.
///
/// Caching: the page (`/`) is `no-cache` with a strong ETag (SHA-256 of the bytes), revalidated at every
/// load. It names every module, stylesheet and script by a versioned URL (`/js/api.js?v=<hash>`): its
/// own tags are rewritten, and an import map written at start maps each module's plain path to its
/// versioned one, so the imports inside the modules need no build step. A versioned URL whose version is the
/// file's is `immutable` for a year: a reload fetches only the page, and what a page loads at its start is of
/// one version. Any other request (the page, a worker's script, a stale version) is `no-cache`.
struct WebClient: Sendable {
    struct File: Sendable {
        var bytes: ByteBuffer
        var contentType: String
        var etag: String
        /// The query value (`?v=`) of the file's versioned URL: the first 16 bytes of its SHA-256, in hex.
        var version: String
        /// The page's own policy (its import map's hash added), else nil for the one every file has.
        var contentSecurityPolicy: String? = nil
        /// Whether its versioned URL may be kept for a year: not the page's, which names the others and is
        /// revalidated at every load whatever its URL says.
        var keptByVersion = true
    }
    /// Files by URL path (`/`, `/app.css`, `/js/api.js`, …).
    let files: [String: File]

    static let contentTypes = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon",
        "webmanifest": "application/manifest+json",
    ]

    /// One policy for every file: scripts and styles from this origin only (and the page's import map, by its
    /// hash: JSON, not code), no other inline code, no plugins,
    /// no framing, no form ever submitted by the browser itself (scripts send every request), and Trusted
    /// Types (the only script URLs made are the workers', by policy `countersign`; no HTML is ever made
    /// from strings).
    static let contentSecurityPolicy = policy(scripts: "'self'")

    static func policy(scripts: String) -> String {
        [
            "default-src 'none'", "script-src \(scripts)", "style-src 'self'", "img-src 'self' data:",
            "connect-src 'self'", "worker-src 'self'", "manifest-src 'self'", "frame-ancestors 'none'",
            "base-uri 'none'", "form-action 'none'", "require-trusted-types-for 'script'",
            "trusted-types countersign",
        ].joined(separator: "; ")
    }

    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: contentSecurityPolicy,
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
        HTTPField.Name("Cross-Origin-Resource-Policy")!: "same-origin",
        HTTPField.Name("Permissions-Policy")!: "camera=(), microphone=(), geolocation=(), payment=()",
    ]

    /// Reads every file under `directory`; `index.html` is served at `/`.
    init(directory: URL) throws {
        var files: [String: File] = [:]
        let root = directory.standardizedFileURL.path
        guard let walker = FileManager.default.enumerator(atPath: root) else {
            throw ConfigurationError("the web client's files are missing (\(root))")
        }
        for case let relative as String in walker {
            let url = URL(fileURLWithPath: root).appendingPathComponent(relative)
            guard let type = Self.contentTypes[url.pathExtension],
                (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
            else { continue }
            let path = relative == "index.html" ? "/" : "/" + relative
            files[path] = File(Data(try Data(contentsOf: url)), contentType: type)
        }
        guard let page = files["/"] else { throw ConfigurationError("the web client has no index.html (\(root))") }
        files["/"] = try Self.versioned(page, files: files)
        self.files = files
    }

    /// The page with every file it names by a versioned URL and, before its first module is fetched, an import
    /// map from each module's path to its versioned URL; its policy allows that map by its hash alone.
    static func versioned(_ page: File, files: [String: File]) throws -> File {
        guard var html = page.bytes.getString(at: 0, length: page.bytes.readableBytes) else {
            throw ConfigurationError("the web client's index.html is not UTF-8")
        }
        let modules = files.filter { $0.key.hasPrefix("/js/") && $0.key.hasSuffix(".js") }
        for (path, file) in files where path != "/" {
            for attribute in ["href", "src"] {
                html = html.replacingOccurrences(
                    of: "\(attribute)=\"\(path)\"",
                    with: "\(attribute)=\"\(path)?v=\(file.version)\""
                )
            }
        }
        let map = [
            "imports": Dictionary(uniqueKeysWithValues: modules.map { ($0.key, "\($0.key)?v=\($0.value.version)") })
        ]
        // JSON, with "<" escaped so that no file name could end the script element.
        let script = String(
            decoding: try JSONSerialization.data(withJSONObject: map, options: [.sortedKeys, .withoutEscapingSlashes]),
            as: UTF8.self
        ).replacingOccurrences(of: "<", with: "\\u003c")
        let tag = "<script type=\"importmap\">" + script + "</script>\n  "
        let first = ["<script type=\"module\"", "<link rel=\"modulepreload\""]
            .compactMap { html.range(of: $0)?.lowerBound }.min()
        guard let first else { throw ConfigurationError("the web client's index.html loads no module") }
        html.insert(contentsOf: tag, at: first)
        let hash = Data(SHA256.hash(data: Data(script.utf8))).base64EncodedString()
        var file = File(Data(html.utf8), contentType: page.contentType)
        file.contentSecurityPolicy = policy(scripts: "'self' 'sha256-\(hash)'")
        file.keptByVersion = false
        return file
    }

    /// The files shipped with the server (`CountersignWebClient`'s `web` resource folder), read once; or, for
    /// working on the web client without rebuilding the server, the folder named by `COUNTERSIGN_WEB_ROOT`.
    static let shipped: Result<WebClient, ConfigurationError> = {
        let override = ProcessInfo.processInfo.environment["COUNTERSIGN_WEB_ROOT"].map {
            URL(fileURLWithPath: $0, isDirectory: true)
        }
        guard let url = override ?? WebClientFiles.root else {
            return .failure(ConfigurationError("the web client's files are missing from the server's resources"))
        }
        do {
            return .success(try WebClient(directory: url))
        } catch let error as ConfigurationError {
            return .failure(error)
        } catch {
            return .failure(ConfigurationError("cannot read the web client's files: \(error)"))
        }
    }()

    /// Where the page is served besides `/`: the OpenID Connect provider's authorization endpoint is the web
    /// client itself, answering the request it was opened with (docs/PROTOCOL.md §5.5).
    static let pageAliases = ["/oauth2/authorize", "/oauth2/logout"]

    func register(on router: Router<AppContext>) {
        for (path, file) in files {
            router.get(RouterPath(path)) { request, _ in Self.response(file, request) }
        }
        if let page = files["/"] {
            for path in Self.pageAliases { router.get(RouterPath(path)) { request, _ in Self.response(page, request) } }
        }
    }

    static func response(_ file: File, _ request: Request) -> Response {
        var headers = securityHeaders
        if let policy = file.contentSecurityPolicy { headers[.contentSecurityPolicy] = policy }
        let current = file.keptByVersion && request.uri.queryParameters["v"].map { String($0) == file.version } == true
        headers[.cacheControl] = current ? "public, max-age=31536000, immutable" : "no-cache"
        headers[.eTag] = file.etag
        // Weak comparison (RFC 9110 §13.1.2): a proxy that compresses marks the tag weak (W/).
        if let match = request.headers[.ifNoneMatch],
            match.split(separator: ",").contains(where: {
                let tag = $0.trimmingCharacters(in: .whitespaces)
                return tag == "*" || (tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag) == file.etag
            })
        {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = file.contentType
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: file.bytes))
    }
}

extension WebClient.File {
    init(_ data: Data, contentType: String) {
        let digest = Data(SHA256.hash(data: data))
        self.init(
            bytes: ByteBuffer(bytes: data),
            contentType: contentType,
            etag: "\"" + digest.prefix(16).base64EncodedString() + "\"",
            version: digest.prefix(16).map { String(format: "%02x", $0) }.joined()
        )
    }
}
