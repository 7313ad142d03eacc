import CountersignClient
import Foundation

extension AuthenticatorCommand {
    /// Runs an authenticator call; the SDK's PingOne errors and expired sessions are said in the CLI's words.
    static func run<T>(_ context: AuthenticatorContext, _ call: () async throws -> T) async throws -> T {
        do {
            return try await context.withSession(call)
        } catch let e as PingOneError {
            throw CLIError.usage("\(e)")
        } catch let e as ClientError where e.code == .notAnAuthenticator {
            throw CLIError.usage("\(e) (this directory's session is not an authenticator's)")
        }
    }

    /// One pending push challenge as `pending` shows it.
    static func describe(_ n: NotificationObject) -> String {
        let c = n.clientContext
        let when = PrivateFiles.date(Date(timeIntervalSince1970: TimeInterval(c.time)))
        let matching =
            n.numberMatchingType == "SELECT_NUMBER"
            ? "pick one of \(Terminal.printable(n.numberMatchingOptions.joined(separator: " ")))"
            : "type the number shown"
        return
            "\(n.transactionID)  \(Terminal.printable(n.username))\(n.isReauthentication ? "  RE-AUTHENTICATION (already signed in)" : "")  from \(Terminal.printable(c.address)) "
            + "(\(Terminal.printable(c.userAgent))) at \(when)  \(Terminal.printable(n.numberMatchingType)): \(matching)  expires \(PrivateFiles.date(n.expiresAt))"
    }

    static func jsonObject(_ n: NotificationObject) -> [String: Any] {
        let c = n.clientContext
        return [
            "id": n.transactionID, "user": n.username, "address": c.address, "userAgent": c.userAgent,
            "time": PrivateFiles.date(Date(timeIntervalSince1970: TimeInterval(c.time))),
            "numberMatchingType": n.numberMatchingType,
            "options": n.numberMatchingOptions, "expiresAt": PrivateFiles.date(n.expiresAt),
            "purpose": n.isReauthentication ? "reauthentication" : "sign-in",
        ]
    }

    /// The pending challenge with this transaction ID (or a unique prefix of it).
    static func notification(_ context: AuthenticatorContext, id: String) async throws -> NotificationObject {
        let pending = try await run(context) { try await context.authenticator.pendingNotifications() }
        let matches = pending.filter { $0.transactionID == id }
        let found = matches.isEmpty ? pending.filter { $0.transactionID.hasPrefix(id) } : matches
        guard found.count == 1 else {
            throw CLIError.usage(
                found.isEmpty
                    ? "no sign-in request \(Terminal.printable(id)) is waiting for this authenticator (answered, expired, or not for it); `countersign authenticator pending` lists them"
                    : "\(Terminal.printable(id)) matches \(found.count) requests; give more of the ID"
            )
        }
        return found[0]
    }

    /// Sends an answer, logs it, and says refusals plainly.
    static func answer(
        _ context: AuthenticatorContext,
        _ n: NotificationObject,
        what: String,
        _ call: @escaping () async throws -> String
    ) async throws -> String {
        do {
            let status = try await context.withSession(call)
            AuthenticatorLog.append("\(what) \(n.transactionID) for \(n.username): \(status)")
            return status
        } catch PingOneError.pushConfirmationTimeout {
            AuthenticatorLog.append("\(what) \(n.transactionID): expired")
            throw CLIError.usage(
                "the sign-in request expired before the answer (PingOne 10009 pushConfirmationTimeout); nothing was changed"
            )
        } catch PingOneError.failedPolicyRequirements {
            AuthenticatorLog.append("\(what) \(n.transactionID): refused")
            throw CLIError.usage(
                "the server refused the answer: the sign-in was already answered or finished (PingOne 10012 failedPolicyRequirements)"
            )
        }
    }
}
