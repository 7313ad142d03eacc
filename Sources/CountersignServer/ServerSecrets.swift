import Foundation
import SQLKit

/// Named random secrets shared by every node of a deployment, created on first use (the `server_secrets`
/// table). Each feature asks its own store for its own names; docs/SERVER.md says which to back up.
public protocol ServerSecretStore: Sendable {
    /// The secret called `name`; `create` makes it when no node has yet.
    func serverSecret(name: String, create: @Sendable () -> [UInt8]) async throws -> [UInt8]
}

extension SQLDatabase {
    /// `ServerSecretStore` for the SQL stores: the first node to insert wins; every node reads the row.
    func serverSecret(name: String, create: @Sendable () -> [UInt8]) async throws -> [UInt8] {
        let fresh = Data(create()).base64EncodedString()
        try await raw(
            "INSERT INTO server_secrets (name, value) VALUES (\(bind: name), \(bind: fresh)) ON CONFLICT (name) DO NOTHING"
        ).run()
        guard let row = try await raw("SELECT value FROM server_secrets WHERE name = \(bind: name)").first(),
            let value = Data(base64Encoded: try row.decode(column: "value", as: String.self))
        else {
            throw ConfigurationError(
                "the server secret \(name) in the database is not base64; restore it from a backup"
            )
        }
        return Array(value)
    }
}
