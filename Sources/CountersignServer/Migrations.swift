import FluentKit
import SQLKit

/// The schema, one migration per table, each with an explicit stable name (FluentKit records names, so
/// renaming a type must not re-run a migration). Times are Unix milliseconds in BIGINT columns, which
/// read the same on SQLite and PostgreSQL.
enum Migrations {
    static var all: [any AsyncMigration] {
        [CreateAccounts(), CreateLoginGuards(), CreateSessions(), CreateAuditEvents(), CreateCaptchaSpent(), CreateServerSecrets()]
    }
}

struct CreateAccounts: AsyncMigration {
    var name: String { "2026-11-23-01-accounts" }
    func prepare(on db: any Database) async throws {
        try await db.schema("accounts")
            .field("id", .string, .identifier(auto: false))
            .field("username", .string, .required)
            .field("name", .string, .required)
            .field("lastname", .string, .required)
            .field("password_hash", .string, .required)
            .field("reauth_minutes", .int64, .required)
            .field("created_at", .int64, .required)
            .unique(on: "username")
            .create()
    }
    func revert(on db: any Database) async throws { try await db.schema("accounts").delete() }
}

struct CreateLoginGuards: AsyncMigration {
    var name: String { "2026-11-23-02-login-guards" }
    func prepare(on db: any Database) async throws {
        try await db.schema("login_guards")
            .field("username", .string, .identifier(auto: false))
            .field("failures", .int64, .required)
            .field("pending", .int64, .required)
            .field("pending_expires_at", .int64)
            .field("delayed_until", .int64)
            .field("locked", .int64, .required)
            .create()
    }
    func revert(on db: any Database) async throws { try await db.schema("login_guards").delete() }
}

struct CreateSessions: AsyncMigration {
    var name: String { "2026-11-23-03-sessions" }
    func prepare(on db: any Database) async throws {
        try await db.schema("sessions")
            .field("token_hash", .string, .identifier(auto: false))
            .field("account_id", .string, .required)
            .field("created_at", .int64, .required)
            .field("last_used_at", .int64, .required)
            .field("authenticated_at", .int64, .required)
            .field("expires_at", .int64, .required)
            .field("address", .string, .required)
            .field("user_agent", .string, .required)
            .create()
        try await (db as! any SQLDatabase).create(index: "sessions_account").on("sessions").column("account_id").run()
    }
    func revert(on db: any Database) async throws { try await db.schema("sessions").delete() }
}

struct CreateAuditEvents: AsyncMigration {
    var name: String { "2026-11-23-04-audit-events" }
    func prepare(on db: any Database) async throws {
        try await db.schema("audit_events")
            .field("id", .int64, .identifier(auto: true))
            .field("account_id", .string, .required)
            .field("at", .int64, .required)
            .field("kind", .string, .required)
            .field("outcome", .string, .required)
            .field("address", .string, .required)
            .field("user_agent", .string, .required)
            .create()
        try await (db as! any SQLDatabase).create(index: "audit_events_account").on("audit_events").column("account_id").column("id").run()
    }
    func revert(on db: any Database) async throws { try await db.schema("audit_events").delete() }
}

struct CreateCaptchaSpent: AsyncMigration {
    var name: String { "2026-11-23-05-captcha-spent" }
    func prepare(on db: any Database) async throws {
        try await db.schema("captcha_spent")
            .field("challenge", .string, .identifier(auto: false))
            .field("expires_at", .int64, .required)
            .create()
    }
    func revert(on db: any Database) async throws { try await db.schema("captcha_spent").delete() }
}

struct CreateServerSecrets: AsyncMigration {
    var name: String { "2026-11-23-06-server-secrets" }
    func prepare(on db: any Database) async throws {
        try await db.schema("server_secrets")
            .field("name", .string, .identifier(auto: false))
            .field("value", .string, .required)
            .create()
    }
    func revert(on db: any Database) async throws { try await db.schema("server_secrets").delete() }
}
