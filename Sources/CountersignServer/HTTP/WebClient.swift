import CountersignWebClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The web client's files (the `CountersignWebClient` target's `web/`: HTML, CSS and ES modules, no build
/// step), read once at start and served from memory at `/` with the same security headers on every file.
///
/// Caching: `no-cache` with a strong ETag (SHA-256 of the bytes), so a browser revalidates every file
/// (a 304, no body, when unchanged) and never runs modules from two versions of the server together.
/// Content-hashed names with long lifetimes would need a build step to rewrite the imports.
struct WebClient: Sendable {
    struct File: Sendable {
        var bytes: ByteBuffer
        var contentType: String
        var etag: String
    }
    /// Files by URL path (`/`, `/app.css`, `/js/api.js`, …).
    let files: [String: File]

    static let contentTypes = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon",
        "webmanifest": "application/manifest+json",
    ]

    /// One policy for every file: scripts and styles from this origin only, no inline code, no plugins,
    /// no framing, no form ever submitted by the browser itself (scripts send every request), and Trusted
    /// Types (the only script URLs made are the workers', by policy `countersign`; no HTML is ever made
    /// from strings).
    static let contentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
        "connect-src 'self'", "worker-src 'self'", "manifest-src 'self'", "frame-ancestors 'none'",
        "base-uri 'none'", "form-action 'none'", "require-trusted-types-for 'script'",
        "trusted-types countersign",
    ].joined(separator: "; ")

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
            let data = try Data(contentsOf: url)
            let digest = SHA256.hash(data: data)
            let etag = "\"" + Data(digest.prefix(16)).base64EncodedString() + "\""
            let path = relative == "index.html" ? "/" : "/" + relative
            files[path] = File(bytes: ByteBuffer(bytes: data), contentType: type, etag: etag)
        }
        guard files["/"] != nil else { throw ConfigurationError("the web client has no index.html (\(root))") }
        self.files = files
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

    func register(on router: Router<AppContext>) {
        for (path, file) in files {
            router.get(RouterPath(path)) { request, _ in Self.response(file, request) }
        }
    }

    static func response(_ file: File, _ request: Request) -> Response {
        var headers = securityHeaders
        headers[.cacheControl] = "no-cache"
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
