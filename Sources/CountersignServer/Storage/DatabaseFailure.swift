import Foundation
import NIOCore
import NIOPosix
import PostgresNIO

/// Says why a database could not be opened in words an operator can act on. PostgresNIO's own
/// description is deliberately generic (its full form may carry the URL and so the password); this
/// reads the parts that hold no secret: the server's message, the socket error, the DNS failure.
enum DatabaseFailure {
    static func describe(_ error: any Error, location: DatabaseLocation) -> String {
        guard case .postgres(let url) = location else { return String(describing: error) }
        let c = URLComponents(string: url)
        let place = "PostgreSQL at \(ListenAddress.display(c?.host ?? "?", c?.port ?? 5432))"
        if let p = error as? PSQLError {
            if let info = p.serverInfo, let message = info[.message] {
                let state = info[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                return "\(place) refused: \(message)\(state)"
            }
            if let underlying = p.underlying { return "cannot reach \(place): \(reason(underlying))" }
            switch p.code {
            case .sslUnsupported:
                return "\(place) does not offer TLS; add ?tlsmode=disable to the URL, or enable TLS on the server"
            case .authMechanismRequiresPassword:
                return "\(place) wants a password; put it in the URL as postgres://user:PASSWORD@host/db"
            case .serverClosedConnection, .uncleanShutdown:
                return "\(place) closed the connection while starting up; check its log"
            default: return "\(place) failed (\(p.code))"
            }
        }
        return "cannot reach \(place): \(reason(error))"
    }

    /// True when `error` says the database connection failed, not a statement: no answer within the
    /// lane's deadline, a closed lane, a PostgreSQL error with no message from the server (the connection
    /// broke), a socket error, or a SQLite connection that is closed or cannot do I/O.
    static func isConnectionLevel(_ error: any Error) -> Bool {
        switch error {
        case is PostgresLane.DeadlineExceeded, is PostgresLane.Closed, is ChannelError, is IOError:
            return true
        case let e as PSQLError:
            return e.serverInfo == nil
        case let e as DirectSQLiteError:
            // SQLITE_IOERR, SQLITE_CANTOPEN and SQLITE_MISUSE (a closed connection), primary codes.
            return [10, 14, 21].contains(e.code & 0xFF)
        default:
            return false
        }
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case let e as NIOConnectionError:
            if e.dnsAError != nil || e.dnsAAAAError != nil { return "the host name \(e.host) does not resolve" }
            if let first = e.connectionErrors.first { return reason(first.error) }
            return "no address of \(e.host) accepted a connection"
        case let e as IOError:
            let why = String(cString: strerror(e.errnoCode))
            return e.errnoCode == ECONNREFUSED
                ? "\(why) (is PostgreSQL running and listening on that host and port?)" : why
        case ChannelError.connectTimeout:
            return "no answer within the connect timeout (a firewall, or a wrong host?)"
        default:
            return String(describing: type(of: error))
        }
    }
}
