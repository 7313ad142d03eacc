import AsyncKit
import CountersignAPI
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

/// Turns every error into an RFC 9457 problem response, so clients never see a framework's plain-text
/// error or a 500 for bad input. Unexpected errors are logged (without request bodies) and become 500.
/// It returns the problem as a response rather than throwing it, so the metrics middleware outside it
/// records the real status and the duration.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = AppContext
    let clock: any WallClock
    let maxBody: Int
    /// Whom a locked-out user asks (`ServerConfiguration.adminContact`).
    let adminContact: String?

    func handle(
        _ request: Request,
        context: AppContext,
        next: (Request, AppContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await problem(request, context: context, next: next)
        } catch let p as Problem {
            return try p.response(from: request, context: context)
        }
    }

    private func problem(
        _ request: Request,
        context: AppContext,
        next: (Request, AppContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let p as Problem {
            throw p
        } catch let e as AccountError {
            throw Problem(e)
        } catch let e as SignInRefusal {
            throw Problem(e, now: clock.now(), contact: adminContact)
        } catch let e as SignInError {
            throw Problem(e, contact: adminContact)
        } catch let e as CaptchaError {
            throw Problem(e)
        } catch let e as RequestError {
            throw Problem(e)
        } catch let e as SessionError {
            throw Problem(e)
        } catch let e as SessionBindingError {
            throw Problem(e)
        } catch let e as DeviceError {
            throw Problem(e)
        } catch let e as MFAError {
            throw Problem(e)
        } catch let e as PasskeyError {
            throw Problem(e)
        } catch let e as RelayError {
            throw Problem(e)
        } catch let e as NotificationError {
            throw Problem(e)
        } catch is ConnectionPoolTimeoutError {
            // Every pooled database connection stayed busy for the pool's whole wait: overload, not a fault.
            context.logger.warning("database connection pool exhausted", metadata: ["path": "\(request.uri.path)"])
            throw Self.busy("Every database connection is busy; retry in a second.")
        } catch let e as PostgresLane.DeadlineExceeded {
            // The lane closed a connection that did not answer in time (and reconnects for the next unit):
            // the request did not fail on its own account, and a retry can succeed.
            context.logger.warning("\(e.description)", metadata: ["path": "\(request.uri.path)"])
            throw Self.busy("The database did not answer in time; retry in a second.")
        } catch is PostgresLane.Closed {
            throw Self.busy("The server is shutting down; retry in a second.")
        } catch let e as HTTPParserError {
            // The client's bytes were not HTTP, or it went away mid-body: its fault, logged below the error
            // level so that anonymous clients cannot fill an operator's error log.
            context.logger.debug("malformed request", metadata: ["error": "\(e)", "path": "\(request.uri.path)"])
            throw Problem.malformed("The request is not valid HTTP/1.1 (\(e)); send a well-formed request.")
        } catch let e as ChannelError where [.inputClosed, .outputClosed, .ioOnClosedChannel, .eof].contains(e) {
            context.logger.debug("client went away", metadata: ["error": "\(e)", "path": "\(request.uri.path)"])
            throw Problem.malformed("The connection closed before the request was read.")
        } catch let e as HTTPError {
            switch e.status {
            case .notFound:
                let path =
                    request.uri.path.count > 1 && request.uri.path.hasSuffix("/")
                    ? String(request.uri.path.dropLast()) : request.uri.path
                if let allowed = APIRoutes.allowed(for: path) {
                    var p = Problem(
                        status: .methodNotAllowed,
                        code: .methodNotAllowed,
                        title: "Method not allowed",
                        detail:
                            "\(request.method) is not allowed on \(path); it takes \(allowed.joined(separator: ", "))."
                    )
                    p.headers[.allow] = allowed.joined(separator: ", ")
                    throw p
                }
                throw Problem.notFound
            case .contentTooLarge: throw Problem.tooLarge(maxBody)
            case .methodNotAllowed:
                throw Problem(
                    status: .methodNotAllowed,
                    code: .methodNotAllowed,
                    title: "Method not allowed",
                    detail: "\(request.method) is not allowed on \(request.uri.path); see /openapi.yaml."
                )
            default:
                throw Problem(
                    status: e.status,
                    code: e.status.code < 500 ? .malformedRequest : .internal,
                    title: e.status.reasonPhrase,
                    detail: e.body ?? e.status.reasonPhrase
                )
            }
        } catch {
            context.logger.error(
                "unexpected error",
                metadata: ["error": "\(type(of: error))", "path": "\(request.uri.path)"]
            )
            throw Problem(
                status: .internalServerError,
                code: .`internal`,
                title: "Internal error",
                detail: "The server failed; the error was logged. Retry, and report it if it persists."
            )
        }
    }

    /// 503 `server-busy` with `Retry-After: 1`: the database could not serve the request now.
    private static func busy(_ detail: String) -> Problem {
        var p = Problem(status: .serviceUnavailable, code: .serverBusy, title: "Server busy", detail: detail)
        p.headers[.retryAfter] = "1"
        return p
    }
}
