import CountersignAPI
import Foundation

/// Why a client call failed.
public enum ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server refused with a problem response.
    case problem(ProblemDetails)
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
    public var code: ProblemCode? { if case .problem(let p) = self { return p.kind } else { return nil } }
}
