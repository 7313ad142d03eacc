import CountersignAPI
import Foundation

/// Why a client call failed.
public enum ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server refused with a problem response.
    case problem(ProblemDetails)
    /// The server could not be reached or the connection failed.
    case transport(String)
    /// The server did not connect, answer or finish answering within the call's `RequestLimits`.
    case timedOut(String)
    /// The server's answer was longer than the call's `RequestLimits.maxBody`; the rest was not read.
    case responseTooLarge(limit: Int)
    /// The server answered something this client does not understand.
    case unexpectedResponse(status: Int, detail: String)
    /// The call needs a session token and the client has none.
    case notSignedIn
    /// The call needs a device session and the client has none.
    case noDeviceSession
    /// A contact's devices differ from the ones pinned for them; nothing was sent.
    case untrustedDevices(username: String, detail: String)
    /// The envelope could not be made (a key that is not P-256, a text over the limit…).
    case sealing(String)
    /// The server's captcha could not be solved within its bounds.
    case captchaUnsolvable
    /// The server answered with a redirect, which this client never follows (it would carry the
    /// credentials along).
    case redirected(status: Int, location: String)
    /// The push channel was closed for good: the device was revoked or its session ended (4403), or
    /// the same device connected elsewhere (4409).
    case pushEnded(PushCloseCode)
    /// The key directory answered for another name than the one asked: nothing was pinned or sent.
    case directoryMismatch(asked: String, answered: String)
    /// The password was right and the account has a second factor: the sign-in is pending.
    case secondFactorRequired(MFARequired)

    public var description: String {
        switch self {
        case .problem(let p): return p.detail
        case .transport(let why): return "cannot reach the server: \(why)"
        case .timedOut(let what): return "timed out: \(what)"
        case .responseTooLarge(let limit):
            return
                "refused the server's answer: it was over \(limit >> 20) MiB, more than this call ever needs (a broken or hostile server?); nothing was kept"
        case .unexpectedResponse(let status, let detail):
            return "unexpected response \(status) from the server: \(detail)"
        case .notSignedIn: return "not signed in; run `countersign account login` first"
        case .noDeviceSession:
            return "this device has no session; run `countersign device init` (or sign in again) first"
        case .untrustedDevices(_, let detail): return detail
        case .sealing(let why): return "cannot seal the message: \(why)"
        case .captchaUnsolvable: return "the server's captcha challenge has no solution within its bounds"
        case .directoryMismatch(let asked, let answered):
            return
                "REFUSED: asked the server for \(asked)'s devices and it answered with \(answered)'s; nothing was sent or pinned"
        case .secondFactorRequired(let p):
            return
                "a second factor is needed (\(p.transaction.methods.joined(separator: ", "))); the sign-in is \(p.transaction.status)"
        case .pushEnded(.replaced):
            return "this device connected to the push channel elsewhere; this connection was replaced"
        case .pushEnded:
            return "the server ended this device's push channel: the device was revoked or its session ended"
        case .redirected(let status, let location):
            return
                "the server answered \(status) redirecting to \(location.isEmpty ? "nowhere" : location); redirects are not followed, "
                + "so credentials are never sent elsewhere: check the server URL (scheme, host, port, no path)"
        }
    }

    /// A failure to reach the server, or one it said would pass (busy, rate limited, a 5xx): worth a retry later.
    public var isTransient: Bool {
        switch self {
        case .transport, .timedOut: return true
        case .problem(let p): return p.status >= 500 || p.status == 429
        case .unexpectedResponse(let status, _): return status >= 500 || status == 429
        default: return false
        }
    }

    /// The problem code, when the server refused.
    public var code: ProblemCode? { if case .problem(let p) = self { return p.kind } else { return nil } }
}
