import ArgumentParser
import CountersignServer
import Foundation

/// The APNs settings (docs/SERVER.md): the `.p8` key file, its Key ID, the Team ID and the app's bundle ID, all
/// four or none; the endpoints and a CA file only for a test's APNs.
enum APNsSettingsReader {
    static let required = [
        "COUNTERSIGN_APNS_KEY_FILE", "COUNTERSIGN_APNS_KEY_ID", "COUNTERSIGN_APNS_TEAM_ID", "COUNTERSIGN_APNS_TOPIC",
    ]

    static func read(_ env: ServerSettings) throws -> APNsSettings? {
        let given = required.filter { env[$0] != nil }
        if given.isEmpty {
            for other in ["COUNTERSIGN_APNS_ENDPOINT", "COUNTERSIGN_APNS_SANDBOX_ENDPOINT", "COUNTERSIGN_APNS_CA_FILE"]
            where env[other] != nil {
                throw ValidationError(
                    "\(env.source(other)) is set, but APNs is not: set \(required.joined(separator: ", ")) too"
                )
            }
            return nil
        }
        guard given.count == required.count else {
            let missing = required.filter { env[$0] == nil }
            throw ValidationError(
                "APNs needs all of \(required.joined(separator: ", ")); \(missing.joined(separator: ", ")) \(missing.count == 1 ? "is" : "are") missing"
            )
        }
        let path = env["COUNTERSIGN_APNS_KEY_FILE"]!
        let pem: String
        do {
            // The provider key signs every push to every device: kept as the metrics token is.
            let bytes = try SecretFile.read(path, what: "the APNs key file", maximum: 16 << 10)
            guard let text = String(bytes: bytes, encoding: .utf8) else {
                throw ValidationError("the APNs key file \(path) is not text (a .p8 file is PEM)")
            }
            pem = text
        } catch let error as ValidationError {
            throw ValidationError(
                "\(env.source("COUNTERSIGN_APNS_KEY_FILE")): \(error.message) (the .p8 file from Apple Developer → Keys)"
            )
        }
        var settings: APNsSettings
        do {
            settings = try APNsSettings(
                keyPEM: pem,
                keyID: env["COUNTERSIGN_APNS_KEY_ID"]!,
                teamID: env["COUNTERSIGN_APNS_TEAM_ID"]!,
                topic: env["COUNTERSIGN_APNS_TOPIC"]!
            )
        } catch {
            throw ValidationError("APNs: \(error.description)")
        }
        for (name, apply) in [
            ("COUNTERSIGN_APNS_ENDPOINT", { (s: inout APNsSettings, u: URL) in s.production = u }),
            ("COUNTERSIGN_APNS_SANDBOX_ENDPOINT", { (s: inout APNsSettings, u: URL) in s.sandbox = u }),
        ] {
            guard let text = env[name] else { continue }
            guard let valid = ServerConfiguration.validPublicURL(text), valid.hasPrefix("https://"),
                let url = URL(string: valid)
            else {
                throw ValidationError("\(env.source(name)) takes an https:// origin, e.g. https://api.push.apple.com")
            }
            apply(&settings, url)
        }
        if let ca = env["COUNTERSIGN_APNS_CA_FILE"] {
            // Trusting another CA for Apple's own hosts would let whoever holds it read every push.
            guard env["COUNTERSIGN_APNS_ENDPOINT"] != nil || env["COUNTERSIGN_APNS_SANDBOX_ENDPOINT"] != nil else {
                throw ValidationError(
                    "\(env.source("COUNTERSIGN_APNS_CA_FILE")) is for a test's APNs: set COUNTERSIGN_APNS_ENDPOINT (or the sandbox's) with it; Apple's own endpoints are checked against the system's CAs"
                )
            }
            guard FileManager.default.isReadableFile(atPath: ca) else {
                throw ValidationError("\(env.source("COUNTERSIGN_APNS_CA_FILE")): \(ca) cannot be read")
            }
            settings.caFile = ca
        }
        switch env["COUNTERSIGN_APNS_TIME_SENSITIVE"] {
        case nil, "1": settings.timeSensitive = true
        case "0": settings.timeSensitive = false
        default:
            throw ValidationError(
                "\(env.source("COUNTERSIGN_APNS_TIME_SENSITIVE")) takes 1 (sign-in requests break through Focus; the default) or 0"
            )
        }
        return settings
    }
}
