import Logging
import PostgresNIO

extension PostgresDatabase {
    /// `body` with a connection leased from the pool for its whole run (several statements, or one
    /// transaction), for the stores opened without the server's lanes (admin commands, tests).
    func withLeasedConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws -> T {
        let logger = self.logger
        return try await withConnection { connection in
            connection.eventLoop.makeFutureWithTask { try await body(connection, logger) }
        }.get()
    }
}
