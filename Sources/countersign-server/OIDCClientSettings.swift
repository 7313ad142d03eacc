import ArgumentParser
import CountersignServer
import Foundation

/// The configuration file's `oidc-clients`: the OpenID Connect clients a declarative deployment defines, a
/// list of objects with the keys of `admin oidc-client add`'s options (docs/SERVER.md). A key it does not
/// know, a value of the wrong kind or a missing `id` is an error naming the client and the key; the rules
/// of the values themselves (URIs, policy, secret) are `OIDCAdmin.apply`'s, checked at start.
enum OIDCClientSettings {
    static let keys: Set<String> = [
        "id", "name", "redirect-uris", "post-logout-redirect-uris", "backchannel-logout-uri", "public",
        "secret-sha256", "first-party", "policy", "allow-users", "offline-access", "id-token-alg", "pairwise",
        "pairing",
    ]

    static func parse(_ value: Any, path: String) throws -> [OIDCAdmin.Configured] {
        guard let list = value as? [Any] else {
            throw ValidationError("oidc-clients in \(path) takes a list of clients ([{\"id\": …}, …])")
        }
        return try list.enumerated().map { index, item in
            guard let object = item as? [String: Any] else {
                throw ValidationError("oidc-clients in \(path): entry \(index + 1) is not an object")
            }
            guard let id = object["id"] as? String else {
                throw ValidationError("oidc-clients in \(path): entry \(index + 1) has no \"id\" (a string)")
            }
            let name = "oidc-clients in \(path), client \(id.debugDescription)"
            if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
                throw ValidationError(
                    "\(name): unknown key `\(unknown)`; the keys are \(keys.sorted().joined(separator: ", "))"
                )
            }
            let entry: Entry
            do {
                entry = try JSONDecoder().decode(Entry.self, from: try JSONSerialization.data(withJSONObject: object))
            } catch DecodingError.typeMismatch(let type, let context) {
                let key = context.codingPath.first?.stringValue ?? "a value"
                let wanted =
                    type == Bool.self ? "true or false" : type == String.self ? "a string" : "a list of strings"
                throw ValidationError("\(name): \(key) takes \(wanted)")
            }
            var d = OIDCAdmin.Draft()
            d.name = entry.name
            d.redirectURIs = entry.redirectURIs ?? []
            d.postLogoutRedirectURIs = entry.postLogoutRedirectURIs ?? []
            d.backchannelLogoutURI = .some(entry.backchannelLogoutURI)
            d.isPublic = entry.isPublic ?? false
            d.firstParty = entry.firstParty
            d.policy = entry.policy
            d.allowedUsers = entry.allowUsers ?? []
            d.offlineAccess = entry.offlineAccess
            d.algorithm = entry.idTokenAlg
            d.pairwise = entry.pairwise
            d.pairing = entry.pairing
            return OIDCAdmin.Configured(id: id, draft: d, secretSHA256: entry.secretSHA256)
        }
    }

    /// One client as JSON has it (the keys checked before, the kinds here: JSON's true is no string).
    struct Entry: Decodable {
        var name: String?
        var redirectURIs: [String]?
        var postLogoutRedirectURIs: [String]?
        var backchannelLogoutURI: String?
        var isPublic: Bool?
        var secretSHA256: String?
        var firstParty: Bool?
        var policy: String?
        var allowUsers: [String]?
        var offlineAccess: Bool?
        var idTokenAlg: String?
        var pairwise: Bool?
        var pairing: Bool?
        enum CodingKeys: String, CodingKey {
            case name, policy, pairwise, pairing
            case redirectURIs = "redirect-uris"
            case postLogoutRedirectURIs = "post-logout-redirect-uris"
            case backchannelLogoutURI = "backchannel-logout-uri"
            case isPublic = "public"
            case secretSHA256 = "secret-sha256"
            case firstParty = "first-party"
            case allowUsers = "allow-users"
            case offlineAccess = "offline-access"
            case idTokenAlg = "id-token-alg"
        }
    }
}
