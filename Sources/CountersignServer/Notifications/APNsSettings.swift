import Crypto
import Foundation

/// How the server reaches APNs for iOS apps built on the SDK (docs/PROTOCOL.md §2.3, docs/SERVER.md): token
/// authentication with a `.p8` key (an ES256 key Apple issued, with its Key ID, for a Team ID), the app's
/// bundle ID as the topic, and the two endpoints (set only for tests, with their CA).
public struct APNsSettings: Sendable {
    let key: P256.Signing.PrivateKey
    public let keyID: String
    public let teamID: String
    public let topic: String
    public var production = URL(string: "https://api.push.apple.com")!
    public var sandbox = URL(string: "https://api.sandbox.push.apple.com")!
    /// PEM certificates to trust instead of the system's (a test's APNs).
    public var caFile: String?
    /// Sign-in requests as `time-sensitive` (they break through Focus); false: `active`.
    public var timeSensitive = true

    /// Why a setting is refused, in words that say which and what to do.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public init(keyPEM: String, keyID: String, teamID: String, topic: String) throws(Invalid) {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: keyPEM) else {
            throw Invalid(
                description:
                    "the APNs key file is not a P-256 private key in PEM (the .p8 file from Apple Developer → Keys, as downloaded)"
            )
        }
        let tenAlphanumerics = #/^[A-Z0-9]{10}$/#
        guard keyID.wholeMatch(of: tenAlphanumerics) != nil else {
            throw Invalid(
                description: "the APNs Key ID is 10 capital letters and digits, as Apple shows it beside the key"
            )
        }
        guard teamID.wholeMatch(of: tenAlphanumerics) != nil else {
            throw Invalid(
                description: "the APNs Team ID is 10 capital letters and digits (Apple Developer → Membership)"
            )
        }
        guard topic.wholeMatch(of: #/^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/#) != nil, topic.utf8.count <= 155 else {
            throw Invalid(description: "the APNs topic is the app's bundle ID, such as com.example.authenticator")
        }
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
    }

    /// The endpoint for a device token of `environment` (`production` or `sandbox`).
    func endpoint(_ environment: String?) -> URL { environment == "sandbox" ? sandbox : production }
}

extension APNsSettings: CustomStringConvertible {
    /// Without the key: what a log may show.
    public var description: String { "APNsSettings(key ID \(keyID), team \(teamID), topic \(topic))" }
}
