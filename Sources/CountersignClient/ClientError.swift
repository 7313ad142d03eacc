import Foundation

/// A problem response (RFC 9457) from the server.
public struct Problem: Codable, Equatable, Sendable, CustomStringConvertible {
    public var type: String
    public var code: String
    public var title: String
    public var status: Int
    public var detail: String
    public var field: String?
    public var retryAt: Date?
    public var locked: Bool?
    public var intervalMinutes: Int?

    public var kind: Code { Code(rawValue: code) ?? .other }
    public var description: String { detail }

    /// The stable codes a client acts on; `other` for codes newer than this client.
    public enum Code: String, Sendable {
        case malformedRequest = "malformed-request", payloadTooLarge = "payload-too-large", invalidField = "invalid-field"
        case usernameTaken = "username-taken", captchaRequired = "captcha-required", captchaInvalid = "captcha-invalid"
        case invalidCredentials = "invalid-credentials", signInDelayed = "sign-in-delayed", accountLocked = "account-locked"
        case signInBusy = "sign-in-busy", rateLimited = "rate-limited", unauthenticated
        case reauthenticationRequired = "reauthentication-required", wrongPassword = "wrong-password", notFound = "not-found"
        case other
    }
}

/// Why a client call failed.
public enum ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server refused with a problem response.
    case problem(Problem)
    /// The server could not be reached or the connection failed.
    case transport(String)
    /// The server answered something this client does not understand.
    case unexpectedResponse(status: Int, detail: String)
    /// The call needs a session token and the client has none.
    case notSignedIn
    /// The server's captcha could not be solved within its bounds.
    case captchaUnsolvable
    /// The server answered with a redirect, which this client never follows (it would carry the
    /// credentials along).
    case redirected(status: Int, location: String)

    public var description: String {
        switch self {
        case .problem(let p): return p.detail
        case .transport(let why): return "cannot reach the server: \(why)"
        case .unexpectedResponse(let status, let detail): return "unexpected response \(status) from the server: \(detail)"
        case .notSignedIn: return "not signed in; run `countersign account login` first"
        case .captchaUnsolvable: return "the server's captcha challenge has no solution within its bounds"
        case .redirected(let status, let location):
            return "the server answered \(status) redirecting to \(location.isEmpty ? "nowhere" : location); redirects are not followed, "
                + "so credentials are never sent elsewhere: check the server URL (scheme, host, port, no path)"
        }
    }

    /// The problem code, when the server refused.
    public var code: Problem.Code? { if case .problem(let p) = self { return p.kind } else { return nil } }
}
