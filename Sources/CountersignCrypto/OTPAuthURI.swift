#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The Key URI Format (`otpauth://TYPE/LABEL?secret=…&issuer=…&algorithm=…&digits=…&period=…&counter=…`)
/// that every authenticator app reads. Parsing is strict and says which part is wrong.
public struct OTPAuthURI: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        case totp
        case hotp(counter: UInt64)
    }

    public var kind: Kind
    public var issuer: String?
    public var account: String
    public var generator: OTPGenerator

    public init(kind: Kind, issuer: String?, account: String, generator: OTPGenerator) {
        self.kind = kind
        self.issuer = issuer
        self.account = account
        self.generator = generator
    }

    public init(parsing text: String) throws {
        guard let c = URLComponents(string: text) else { throw OTPError.malformedURI("not a URI") }
        guard c.scheme?.lowercased() == "otpauth" else { throw OTPError.malformedURI("the scheme must be otpauth://") }
        let type = c.host?.lowercased()
        guard type == "totp" || type == "hotp" else {
            throw OTPError.malformedURI("the type must be totp or hotp, not \(c.host ?? "nothing")")
        }
        guard let label = PercentEncoding.decode(c.percentEncodedPath.dropFirst()) else {
            throw OTPError.malformedURI("the label has a broken %-escape")
        }
        let (labelIssuer, labelAccount) = try Self.splitLabel(label)
        var query: [String: String] = [:]
        for item in c.queryItems ?? [] {
            let name = item.name.lowercased()
            guard query[name] == nil else { throw OTPError.malformedURI("parameter \(name) appears twice") }
            query[name] = item.value ?? ""
        }
        account = labelAccount
        // The parameter follows the label's rules, so that the canonical URI (which writes the issuer in
        // both) parses again to the same value: spaces around it are not part of it, and it must say
        // something without a colon (the label's issuer ends at the first colon).
        let issuerParameter = query["issuer"].map { $0.trimmingSpaces(newlines: true) }
        if let i = issuerParameter {
            guard !i.isEmpty else {
                throw OTPError.malformedURI("the issuer parameter is blank; leave it out or name the issuer")
            }
            guard !i.unicodeScalars.contains(":") else {
                throw OTPError.malformedURI("the issuer parameter holds a colon (\(i)), which the label cannot carry")
            }
        }
        if let i = issuerParameter, let l = labelIssuer, i != l {
            throw OTPError.malformedURI("the issuer parameter (\(i)) differs from the label's prefix (\(l))")
        }
        issuer = issuerParameter ?? labelIssuer
        guard let secretText = query["secret"], !secretText.isEmpty else {
            throw OTPError.malformedURI("the secret parameter is missing")
        }
        guard let secret = Base32.decode(secretText), !secret.isEmpty else {
            throw OTPError.invalidSecret("the secret is not base32 (letters A-Z and digits 2-7)")
        }
        let algorithm: OTPGenerator.Algorithm
        switch query["algorithm"]?.uppercased() {
        case nil, "SHA1": algorithm = .sha1
        case "SHA256": algorithm = .sha256
        case "SHA512": algorithm = .sha512
        case let other?: throw OTPError.invalidParameter("algorithm \(other) is not SHA1, SHA256 or SHA512")
        }
        func integer(_ name: String, _ fallback: Int) throws -> Int {
            guard let v = query[name] else { return fallback }
            guard let n = Int(v), String(n) == v else {
                throw OTPError.invalidParameter("\(name) must be a decimal number, not \(v)")
            }
            return n
        }
        generator = try OTPGenerator(
            secret: secret,
            algorithm: algorithm,
            digits: try integer("digits", 6),
            // HOTP has no period: an hotp URI's period is ignored, as authenticator apps do, so the value
            // is the one its canonical URI (which writes no period for hotp) parses to.
            period: type == "hotp" ? 30 : try integer("period", 30)
        )
        if type == "hotp" {
            guard let v = query["counter"], let n = UInt64(v) else {
                throw OTPError.malformedURI("an hotp URI needs counter=N")
            }
            kind = .hotp(counter: n)
        } else {
            kind = .totp
        }
    }

    /// `ISSUER:ACCOUNT` or `ACCOUNT` (the colon may have been %3A), each part trimmed. Both parts must say
    /// something: an authenticator would show an entry with no name, and the user could not tell it apart.
    static func splitLabel(_ label: String) throws -> (issuer: String?, account: String) {
        func trimmed(_ s: Substring) -> String { s.trimmingSpaces(newlines: true) }
        // The colon is found among scalars, not characters: an account that starts with a combining mark
        // would otherwise fuse with it into one character and hide it (a fuzz finding).
        let scalars = label.unicodeScalars
        guard let colon = scalars.firstIndex(of: ":") else {
            let account = trimmed(label[...])
            guard !account.isEmpty else { throw OTPError.malformedURI("the label (account name) is missing or blank") }
            return (nil, account)
        }
        let issuer = trimmed(Substring(String(scalars[..<colon])))
        let account = trimmed(Substring(String(scalars[scalars.index(after: colon)...])))
        guard !issuer.isEmpty else {
            throw OTPError.malformedURI("the label's issuer before ':' is blank; write ISSUER:ACCOUNT or just ACCOUNT")
        }
        guard !account.isEmpty else {
            throw OTPError.malformedURI("the label has no account name after \"\(issuer):\"; write ISSUER:ACCOUNT")
        }
        return (issuer, account)
    }

    /// The canonical URI: issuer in label and parameter, secret unpadded, every parameter explicit.
    public var uri: String {
        var c = URLComponents()
        c.scheme = "otpauth"
        switch kind {
        case .totp: c.host = "totp"
        case .hotp: c.host = "hotp"
        }
        let label = issuer.map { "\($0):\(account)" } ?? account
        c.percentEncodedPath =
            "/"
            + PercentEncoding.encode(label, allowing: PercentEncoding.labelCharacters)
        var items = [URLQueryItem(name: "secret", value: Base32.encode(generator.secret))]
        if let issuer { items.append(URLQueryItem(name: "issuer", value: issuer)) }
        items += [
            URLQueryItem(name: "algorithm", value: generator.algorithm.rawValue),
            URLQueryItem(name: "digits", value: String(generator.digits)),
        ]
        switch kind {
        case .totp: items.append(URLQueryItem(name: "period", value: String(generator.period)))
        case .hotp(let counter): items.append(URLQueryItem(name: "counter", value: String(counter)))
        }
        c.queryItems = items
        return c.string ?? ""
    }
}
