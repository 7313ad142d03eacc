import Crypto
import Foundation

/// Who passkeys are registered to (docs/PROTOCOL.md §5.1): the RP ID and the origins allowed to use it.
struct RelyingParty: Sendable, Equatable {
    static let name = "Countersign"

    let id: String
    let origins: Set<String>
    let idHash: [UInt8]
    /// Without `--public-url` the server is reached at `http://localhost:PORT` (a development setup):
    /// then any port of localhost is accepted, and only that.
    let anyLocalhostPort: Bool

    /// `publicURL` gives the RP ID (its host) and the first origin; `extraOrigins` add others.
    init(publicURL: URL?, extraOrigins: [String] = []) {
        let host = publicURL?.host()?.lowercased() ?? "localhost"
        id = host
        var origins = Set(extraOrigins.map(Self.origin))
        if let publicURL { origins.insert(Self.origin(publicURL.absoluteString)) }
        self.origins = origins
        anyLocalhostPort = publicURL == nil
        idHash = Array(SHA256.hash(data: Array(host.utf8)))
    }

    func accepts(origin: String) -> Bool {
        // Bytes, not String equality (which treats canonically equivalent text as equal).
        if origins.contains(where: { Array($0.utf8) == Array(origin.utf8) }) { return true }
        guard anyLocalhostPort, let c = URLComponents(string: origin) else { return false }
        return (c.scheme == "http" || c.scheme == "https") && c.host == "localhost" && c.path.isEmpty
            && c.query == nil && c.user == nil && Array(Self.origin(origin).utf8) == Array(origin.utf8)
    }

    /// `scheme://host[:port]`, lowercased, without a default port or a path: how browsers write it.
    static func origin(_ text: String) -> String {
        guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(), let host = c.host?.lowercased()
        else { return text }
        let port = c.port.flatMap { (scheme == "https" && $0 == 443) || (scheme == "http" && $0 == 80) ? nil : $0 }
        return "\(scheme)://\(host)\(port.map { ":\($0)" } ?? "")"
    }
}
