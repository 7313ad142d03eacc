import FluentKit
import SQLKit

/// The schema, one migration per table, each with an explicit stable name (FluentKit records names, so
/// renaming a type must not re-run a migration). Times are Unix milliseconds in BIGINT columns, which
/// read the same on SQLite and PostgreSQL.
enum Migrations {
    static var all: [any AsyncMigration] {
        [
            CreateAccounts(), CreateLoginGuards(), CreateSessions(), CreateAuditEvents(), CreateCaptchaSpent(),
            CreateServerSecrets(),
            CreateDevices(), CreateDeviceKeys(), CreateDeviceChallenges(), CreateDeviceSessions(), CreateMessages(),
            CreateMessageQueue(), CreatePush(), CreateMFA(),
            AddKeyRotationProofs(), AddTransactionFinished(), AddQuotaAndExpiryIndexes(), CreatePasskeys(),
            AddKeyGate(), AddSessionPasskey(), EndLockedAccountsSessions(), CreateSessionBindings(), AddKeyVouches(),
            AddKeyProofs(), AddDeviceChallengeIndexes(), AddSessionMethods(),
            CreateOIDC(), AddOIDCPairing(), AddOIDCClientPairingAndManaged(), AddPushTargets(),
            AddPushTargetLiveUntil(),
        ]
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
        try await (db as! any SQLDatabase).create(index: "audit_events_account").on("audit_events").column("account_id")
            .column("id").run()
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

struct CreateDevices: AsyncMigration {
    var name: String { "2026-11-24-01-devices" }
    func prepare(on db: any Database) async throws {
        try await db.schema("devices")
            .field("id", .string, .identifier(auto: false))
            .field("account_id", .string, .required)
            .field("name", .string, .required)
            .field("signing_key", .data, .required)
            .field("signing_key_id", .string, .required)
            .field("encryption_key", .data, .required)
            .field("encryption_key_id", .string, .required)
            .field("created_at", .int64, .required)
            .field("keys_since", .int64, .required)
            .field("last_seen_at", .int64)
            .field("revoked_at", .int64)
            .create()
        try await (db as! any SQLDatabase).create(index: "devices_account").on("devices").column("account_id").run()
    }
    func revert(on db: any Database) async throws { try await db.schema("devices").delete() }
}

/// Every key pair a device has had; the unique indexes make a key usable by one device, once.
struct CreateDeviceKeys: AsyncMigration {
    var name: String { "2026-11-24-02-device-keys" }
    func prepare(on db: any Database) async throws {
        try await db.schema("device_keys")
            .field("id", .int64, .identifier(auto: true))
            .field("device_id", .string, .required)
            .field("account_id", .string, .required)
            .field("signing_key", .data, .required)
            .field("signing_key_id", .string, .required)
            .field("encryption_key_id", .string, .required)
            .field("added_at", .int64, .required)
            .field("retired_at", .int64)
            .field("retired_because", .string)
            .create()
        let sql = db as! any SQLDatabase
        try await sql.create(index: "device_keys_signing").on("device_keys").column("signing_key_id").unique().run()
        try await sql.create(index: "device_keys_encryption").on("device_keys").column("encryption_key_id").unique()
            .run()
        try await sql.create(index: "device_keys_account").on("device_keys").column("account_id").run()
    }
    func revert(on db: any Database) async throws { try await db.schema("device_keys").delete() }
}

/// What a reader needs to follow a rotation without trusting the server (docs/PROTOCOL.md §1): each key's
/// encryption SPKI, and on a key that replaced another, the old key's signature over the rotation.
/// Rows written before it have neither (NULL).
struct AddKeyRotationProofs: AsyncMigration {
    var name: String { "2026-11-25-01-key-rotation-proofs" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        let bytes: SQLQueryString = sql.dialect.name == "postgresql" ? "BYTEA" : "BLOB"
        try await sql.raw("ALTER TABLE device_keys ADD COLUMN encryption_key \(bytes)").run()
        try await sql.raw("ALTER TABLE device_keys ADD COLUMN rotation_signature \(bytes)").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE device_keys DROP COLUMN rotation_signature").run()
        try await sql.raw("ALTER TABLE device_keys DROP COLUMN encryption_key").run()
    }
}

/// Whether a sign-in transaction has reached a terminal status, so that the per-account cap counts only
/// the ones still waiting for a second factor.
struct AddTransactionFinished: AsyncMigration {
    var name: String { "2026-11-25-02-mfa-transaction-finished" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE mfa_transactions ADD COLUMN finished BIGINT NOT NULL DEFAULT 0").run()
        // The cap counts an account's unexpired rows inside the write transaction of every sign-in.
        try await sql.raw("CREATE INDEX mfa_transactions_account ON mfa_transactions (account_id, expires_at)").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("DROP INDEX mfa_transactions_account").run()
        try await sql.raw("ALTER TABLE mfa_transactions DROP COLUMN finished").run()
    }
}

struct CreateDeviceChallenges: AsyncMigration {
    var name: String { "2026-11-24-03-device-challenges" }
    func prepare(on db: any Database) async throws {
        try await db.schema("device_challenges")
            .field("challenge_hash", .string, .identifier(auto: false))
            .field("kind", .string, .required)
            .field("subject", .string, .required)
            .field("expires_at", .int64, .required)
            .create()
    }
    func revert(on db: any Database) async throws { try await db.schema("device_challenges").delete() }
}

struct CreateDeviceSessions: AsyncMigration {
    var name: String { "2026-11-24-04-device-sessions" }
    func prepare(on db: any Database) async throws {
        try await db.schema("device_sessions")
            .field("token_hash", .string, .identifier(auto: false))
            .field("device_id", .string, .required)
            .field("account_id", .string, .required)
            .field("created_at", .int64, .required)
            .field("last_used_at", .int64, .required)
            .field("expires_at", .int64, .required)
            .create()
        let sql = db as! any SQLDatabase
        try await sql.create(index: "device_sessions_device").on("device_sessions").column("device_id").run()
        try await sql.create(index: "device_sessions_account").on("device_sessions").column("account_id").run()
    }
    func revert(on db: any Database) async throws { try await db.schema("device_sessions").delete() }
}

/// Each envelope once, with its routing facts; the bytes are ciphertext (docs/SPEC.md §8).
struct CreateMessages: AsyncMigration {
    var name: String { "2026-11-24-05-messages" }
    func prepare(on db: any Database) async throws {
        try await db.schema("messages")
            .field("id", .string, .identifier(auto: false))
            .field("sender_account", .string, .required)
            .field("sender_device", .string, .required)
            .field("sender_username", .string, .required)
            .field("recipients", .string, .required)
            .field("envelope", .data, .required)
            .field("digest", .string, .required)
            .field("size", .int64, .required)
            .field("accepted_at", .int64, .required)
            .field("deliver_at", .int64, .required)
            .field("expires_at", .int64, .required)
            .field("recipient_devices", .int64, .required)
            .field("fetched_by", .int64, .required)
            .field("acked_by", .int64, .required)
            .field("cancelled", .int64, .required)
            .create()
        try await (db as! any SQLDatabase).create(index: "messages_expiry").on("messages").column("expires_at").run()
    }
    func revert(on db: any Database) async throws { try await db.schema("messages").delete() }
}

/// One row per (device, message) until the device acknowledges it or it expires.
struct CreateMessageQueue: AsyncMigration {
    var name: String { "2026-11-24-06-message-queue" }
    func prepare(on db: any Database) async throws {
        try await db.schema("message_queue")
            .field("seq", .int64, .identifier(auto: true))
            .field("device_id", .string, .required)
            .field("message_id", .string, .required)
            .field("incoming", .int64, .required)
            .field("deliver_at", .int64, .required)
            .field("expires_at", .int64, .required)
            .field("fetched", .int64, .required)
            .create()
        let sql = db as! any SQLDatabase
        try await sql.create(index: "message_queue_device").on("message_queue").column("device_id").column("seq").run()
        try await sql.create(index: "message_queue_message").on("message_queue").column("message_id").run()
        try await sql.create(index: "message_queue_expiry").on("message_queue").column("expires_at").run()
    }
    func revert(on db: any Database) async throws { try await db.schema("message_queue").delete() }
}

/// Push tickets (docs/PROTOCOL.md §2), and which delayed messages have been announced to the push channel.
struct CreatePush: AsyncMigration {
    var name: String { "2026-11-25-01-push" }
    func prepare(on db: any Database) async throws {
        try await db.schema("push_tickets")
            .field("ticket_hash", .string, .identifier(auto: false))
            .field("device_id", .string, .required)
            .field("session_hash", .string, .required)
            .field("expires_at", .int64, .required)
            .create()
        let sql = db as! any SQLDatabase
        // Delayed messages accepted before this are announced once when the scheduler first runs: a spare wake-up at worst.
        try await sql.raw("ALTER TABLE messages ADD COLUMN announced BIGINT NOT NULL DEFAULT 0").run()
        try await sql.raw(
            "CREATE INDEX messages_due ON messages (deliver_at) WHERE announced = 0 AND deliver_at > accepted_at"
        ).run()
    }
    func revert(on db: any Database) async throws {
        try await db.schema("push_tickets").delete()
        try await (db as! any SQLDatabase).raw("DROP INDEX messages_due").run()
    }
}

/// Multi-factor sign-in (docs/PROTOCOL.md §3). Transactions and authentication codes keep their state as
/// JSON with a version: every transition is a compare-and-set, so concurrent answers cannot both apply.
struct CreateMFA: AsyncMigration {
    var name: String { "2026-11-25-02-mfa" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE devices ADD COLUMN kind TEXT NOT NULL DEFAULT 'messaging'").run()
        try await db.schema("authenticators")
            .field("device_id", .string, .identifier(auto: false))
            .field("account_id", .string, .required)
            .field("push_allowed", .int64, .required)
            .field("totp_secret", .data, .required)
            .field("totp_last_step", .int64)
            .field("paired_at", .int64, .required)
            .create()
        try await sql.create(index: "authenticators_account").on("authenticators").column("account_id").run()
        try await db.schema("mfa_accounts")
            .field("account_id", .string, .identifier(auto: false))
            .field("state", .string, .required)
            .field("version", .int64, .required)
            .create()
        try await db.schema("pairing_keys")
            .field("key_hash", .string, .identifier(auto: false))
            .field("account_id", .string, .required)
            .field("expires_at", .int64, .required)
            .create()
        try await sql.create(index: "pairing_keys_account").on("pairing_keys").column("account_id").run()
        try await db.schema("mfa_transactions")
            .field("id", .string, .identifier(auto: false))
            .field("account_id", .string, .required)
            .field("binding_hash", .string, .required)
            .field("state", .string, .required)
            .field("version", .int64, .required)
            .field("expires_at", .int64, .required)
            .create()
        try await db.schema("mfa_challenges")
            .field("device_id", .string, .required)
            .field("transaction_id", .string, .required)
            .field("jwt", .string, .required)
            .field("expires_at", .int64, .required)
            .unique(on: "device_id", "transaction_id")
            .create()
        try await db.schema("recovery_codes")
            .field("code_hash", .string, .identifier(auto: false))
            .field("account_id", .string, .required)
            .create()
        try await sql.create(index: "recovery_codes_account").on("recovery_codes").column("account_id").run()
        try await db.schema("auth_codes")
            .field("code_hash", .string, .identifier(auto: false))
            .field("binding_hash", .string, .required)
            .field("state", .string, .required)
            .field("version", .int64, .required)
            .field("expires_at", .int64, .required)
            .create()
        try await sql.create(index: "auth_codes_binding").on("auth_codes").column("binding_hash").run()
        try await db.schema("authenticator_logs")
            .field("support_id", .string, .identifier(auto: false))
            .field("device_id", .string, .required)
            .field("account_id", .string, .required)
            .field("created_at", .int64, .required)
            .field("text", .string, .required)
            .create()
    }
    func revert(on db: any Database) async throws {
        for table in [
            "authenticators", "mfa_accounts", "pairing_keys", "mfa_transactions", "mfa_challenges", "recovery_codes",
            "auth_codes",
            "authenticator_logs",
        ] {
            try await db.schema(table).delete()
        }
    }
}

/// The per-account quota sums the sizes of an account's unexpired messages (`MessageQuota`): an index
/// that answers it without reading the envelopes. And the purge's deletes by expiry, each by an index
/// rather than a scan every 10 minutes.
struct AddQuotaAndExpiryIndexes: AsyncMigration {
    var name: String { "2026-11-25-03-quota-and-expiry-indexes" }
    static let indexes = [
        ("messages_sender", "messages (sender_account, expires_at, size, cancelled)"),
        ("mfa_transactions_expiry", "mfa_transactions (expires_at)"), ("auth_codes_expiry", "auth_codes (expires_at)"),
        ("mfa_challenges_expiry", "mfa_challenges (expires_at)"), ("push_tickets_expiry", "push_tickets (expires_at)"),
        ("pairing_keys_expiry", "pairing_keys (expires_at)"),
        ("authenticator_logs_created", "authenticator_logs (created_at)"),
    ]
    func prepare(on db: any Database) async throws {
        for (name, on) in Self.indexes {
            try await (db as! any SQLDatabase).raw("CREATE INDEX \(unsafeRaw: name) ON \(unsafeRaw: on)").run()
        }
    }
    func revert(on db: any Database) async throws {
        for (name, _) in Self.indexes { try await (db as! any SQLDatabase).raw("DROP INDEX \(unsafeRaw: name)").run() }
    }
}

/// Passkeys (docs/PROTOCOL.md §5): each account's WebAuthn user handle, its credentials (a credential ID
/// belongs to one account only) and the ceremonies in flight, each answered at most once.
struct CreatePasskeys: AsyncMigration {
    var name: String { "2026-11-26-01-passkeys" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await db.schema("webauthn_users")
            .field("account_id", .string, .identifier(auto: false))
            .field("user_handle", .data, .required)
            .unique(on: "user_handle")
            .create()
        try await db.schema("passkeys")
            .field("id", .string, .identifier(auto: false))
            .field("account_id", .string, .required)
            .field("credential_id", .data, .required)
            .field("public_key", .data, .required)
            .field("sign_count", .int64, .required)
            .field("backup_eligible", .int64, .required)
            .field("backed_up", .int64, .required)
            .field("aaguid", .data, .required)
            .field("transports", .string, .required)
            .field("name", .string, .required)
            .field("created_at", .int64, .required)
            .field("last_used_at", .int64)
            .unique(on: "credential_id")
            .create()
        try await sql.create(index: "passkeys_account").on("passkeys").column("account_id").run()
        try await db.schema("passkey_ceremonies")
            .field("id", .string, .identifier(auto: false))
            .field("state", .string, .required)
            .field("expires_at", .int64, .required)
            .create()
        try await sql.create(index: "passkey_ceremonies_expiry").on("passkey_ceremonies").column("expires_at").run()
    }
    func revert(on db: any Database) async throws {
        for table in ["webauthn_users", "passkeys", "passkey_ceremonies"] { try await db.schema(table).delete() }
    }
}

/// The browser's key gate (docs/SPEC.md §14): each passkey's PRF salt, and the hash of the token with
/// which a locked-out browser revokes its own device.
struct AddKeyGate: AsyncMigration {
    var name: String { "2026-11-26-02-key-gate" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        let bytes: SQLQueryString = sql.dialect.name == "postgresql" ? "BYTEA" : "BLOB"
        try await sql.raw("ALTER TABLE passkeys ADD COLUMN prf_salt \(bytes)").run()
        try await sql.raw("ALTER TABLE devices ADD COLUMN revocation_token_hash \(bytes)").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE devices DROP COLUMN revocation_token_hash").run()
        try await sql.raw("ALTER TABLE passkeys DROP COLUMN prf_salt").run()
    }
}

/// The passkey a discoverable sign-in made a session with, so that removing the passkey ends the session.
struct AddSessionPasskey: AsyncMigration {
    var name: String { "2026-11-26-03-session-passkey" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE sessions ADD COLUMN passkey_id TEXT").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE sessions DROP COLUMN passkey_id").run()
    }
}

/// Accounts locked before a lock ended everything in its own transaction (a lock counted from an expired
/// reservation ended nothing): their sessions, device sessions and pairing keys end now, as a lock's do.
struct EndLockedAccountsSessions: AsyncMigration {
    var name: String { "2026-11-27-01-end-locked-accounts-sessions" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        for table in ["pairing_keys", "sessions", "device_sessions"] {
            try await sql.raw(
                """
                DELETE FROM \(unsafeRaw: table) WHERE account_id IN
                    (SELECT a.id FROM accounts a JOIN login_guards g ON g.username = a.username WHERE g.locked <> 0)
                """
            ).run()
        }
    }
    func revert(on db: any Database) async throws {}
}

/// Keys a browser bound to its account session, so that a reload resumes it (docs/PROTOCOL.md §1.1), and
/// the binding each session was started from or bound to. Every ending of the account's sessions deletes
/// its bindings first, in the same transaction.
struct CreateSessionBindings: AsyncMigration {
    var name: String { "2026-11-29-01-session-bindings" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        let bytes: SQLQueryString = sql.dialect.name == "postgresql" ? "BYTEA" : "BLOB"
        try await sql.raw(
            """
            CREATE TABLE session_bindings (
                id TEXT PRIMARY KEY, account_id TEXT NOT NULL, public_key \(bytes) NOT NULL,
                device_id TEXT, created_at BIGINT NOT NULL, last_used_at BIGINT NOT NULL,
                authenticated_at BIGINT NOT NULL, passkey_id TEXT
            )
            """
        ).run()
        try await sql.raw("CREATE INDEX session_bindings_account ON session_bindings (account_id)").run()
        try await sql.raw("ALTER TABLE sessions ADD COLUMN binding_id TEXT").run()
        try await sql.raw("CREATE INDEX sessions_binding ON sessions (binding_id)").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("DROP INDEX sessions_binding").run()
        try await sql.raw("ALTER TABLE sessions DROP COLUMN binding_id").run()
        try await sql.raw("DROP TABLE session_bindings").run()
    }
}

/// A device linked by another device of its account (docs/PROTOCOL.md §1): the vouch is kept on the key it
/// names, beside the rotation signature, so that the directory's history carries it to contacts.
struct AddKeyVouches: AsyncMigration {
    var name: String { "2026-11-30-01-key-vouches" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        let bytes: SQLQueryString = sql.dialect.name == "postgresql" ? "BYTEA" : "BLOB"
        try await sql.raw("ALTER TABLE device_keys ADD COLUMN vouched_by TEXT").run()
        try await sql.raw("ALTER TABLE device_keys ADD COLUMN vouched_at BIGINT").run()
        try await sql.raw("ALTER TABLE device_keys ADD COLUMN vouch_signature \(bytes)").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE device_keys DROP COLUMN vouch_signature").run()
        try await sql.raw("ALTER TABLE device_keys DROP COLUMN vouched_at").run()
        try await sql.raw("ALTER TABLE device_keys DROP COLUMN vouched_by").run()
    }
}

/// A key's own signature over the registration or rotation that brought it in (docs/PROTOCOL.md §1.3), with
/// a registration's challenge, so that the directory can show contacts that the signing key chose its
/// encryption key. Keys registered before have none.
struct AddKeyProofs: AsyncMigration {
    var name: String { "2026-11-30-02-key-proofs" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        let bytes: SQLQueryString = sql.dialect.name == "postgresql" ? "BYTEA" : "BLOB"
        try await sql.raw("ALTER TABLE device_keys ADD COLUMN key_signature \(bytes)").run()
        try await sql.raw("ALTER TABLE device_keys ADD COLUMN registration_challenge \(bytes)").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE device_keys DROP COLUMN registration_challenge").run()
        try await sql.raw("ALTER TABLE device_keys DROP COLUMN key_signature").run()
    }
}

/// The purge of expired device challenges (every 10 minutes) and the one nonce per session binding
/// (`kind`, `subject`) look them up by index rather than by scanning the table.
struct AddDeviceChallengeIndexes: AsyncMigration {
    var name: String { "2026-11-30-03-device-challenge-indexes" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("CREATE INDEX device_challenges_expiry ON device_challenges (expires_at)").run()
        try await sql.raw("CREATE INDEX device_challenges_subject ON device_challenges (kind, subject)").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("DROP INDEX device_challenges_subject").run()
        try await sql.raw("DROP INDEX device_challenges_expiry").run()
    }
}

/// How each account session (and each binding, for the sessions resumed from it) was authenticated: RFC 8176
/// `amr` values, space-separated (`SessionMethods`). Sessions from before have none: read as the password.
struct AddSessionMethods: AsyncMigration {
    var name: String { "2026-11-30-04-session-methods" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE sessions ADD COLUMN amr TEXT").run()
        try await sql.raw("ALTER TABLE session_bindings ADD COLUMN amr TEXT").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE session_bindings DROP COLUMN amr").run()
        try await sql.raw("ALTER TABLE sessions DROP COLUMN amr").run()
    }
}

/// The OpenID Connect provider (docs/PROTOCOL.md §6): registered clients, its signing keys (private halves
/// sealed), consents, and what a sign-in granted a client: the grant, its single-use code, its tokens (hashes).
struct CreateOIDC: AsyncMigration {
    var name: String { "2026-11-30-05-oidc" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        let bytes: SQLQueryString = sql.dialect.name == "postgresql" ? "BYTEA" : "BLOB"
        try await sql.raw(
            """
            CREATE TABLE oidc_clients (id TEXT PRIMARY KEY, name TEXT NOT NULL, secret_hash TEXT,
                redirect_uris TEXT NOT NULL, post_logout_redirect_uris TEXT NOT NULL, backchannel_logout_uri TEXT,
                first_party BIGINT NOT NULL, policy TEXT NOT NULL, allowed_users TEXT NOT NULL,
                offline_access BIGINT NOT NULL, id_token_alg TEXT NOT NULL, pairwise BIGINT NOT NULL,
                created_at BIGINT NOT NULL)
            """
        ).run()
        try await sql.raw(
            """
            CREATE TABLE oidc_signing_keys (kid TEXT PRIMARY KEY, alg TEXT NOT NULL, private_key \(bytes) NOT NULL,
                created_at BIGINT NOT NULL, retired_at BIGINT, published_until BIGINT)
            """
        ).run()
        try await sql.raw(
            """
            CREATE TABLE oidc_consents (account_id TEXT NOT NULL, client_id TEXT NOT NULL, scope TEXT NOT NULL,
                granted_at BIGINT NOT NULL, PRIMARY KEY (account_id, client_id))
            """
        ).run()
        try await sql.raw(
            """
            CREATE TABLE oidc_grants (id TEXT PRIMARY KEY, client_id TEXT NOT NULL, account_id TEXT NOT NULL,
                scope TEXT NOT NULL, session_id TEXT NOT NULL, auth_time BIGINT NOT NULL, amr TEXT, nonce TEXT,
                created_at BIGINT NOT NULL, revoked_at BIGINT)
            """
        ).run()
        try await sql.raw("CREATE INDEX oidc_grants_account ON oidc_grants (account_id, client_id)").run()
        try await sql.raw("CREATE INDEX oidc_grants_client ON oidc_grants (client_id)").run()
        try await sql.raw(
            """
            CREATE TABLE oidc_codes (code_hash TEXT PRIMARY KEY, grant_id TEXT NOT NULL, redirect_uri TEXT NOT NULL,
                code_challenge TEXT, expires_at BIGINT NOT NULL, redeemed_at BIGINT)
            """
        ).run()
        try await sql.raw("CREATE INDEX oidc_codes_grant ON oidc_codes (grant_id)").run()
        try await sql.raw("CREATE INDEX oidc_codes_expiry ON oidc_codes (expires_at)").run()
        try await sql.raw(
            """
            CREATE TABLE oidc_tokens (token_hash TEXT PRIMARY KEY, grant_id TEXT NOT NULL, kind TEXT NOT NULL,
                expires_at BIGINT NOT NULL, created_at BIGINT NOT NULL, used_at BIGINT)
            """
        ).run()
        try await sql.raw("CREATE INDEX oidc_tokens_grant ON oidc_tokens (grant_id)").run()
        try await sql.raw("CREATE INDEX oidc_tokens_expiry ON oidc_tokens (expires_at)").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        for table in ["oidc_tokens", "oidc_codes", "oidc_grants", "oidc_consents", "oidc_signing_keys", "oidc_clients"]
        {
            try await sql.raw("DROP TABLE \(unsafeRaw: table)").run()
        }
    }
}

/// PingOne's pairing by OpenID Connect (docs/PROTOCOL.md §6.11): a pairing key bound to the one signing key
/// a mobile payload named, the payloads already used (until they expire), and the grant that carries one.
struct AddOIDCPairing: AsyncMigration {
    var name: String { "2026-12-01-01-oidc-pairing" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE pairing_keys ADD COLUMN bound_key TEXT").run()
        try await sql.raw("CREATE TABLE pairing_payloads (payload_hash TEXT PRIMARY KEY, expires_at BIGINT NOT NULL)")
            .run()
        try await sql.raw("ALTER TABLE oidc_grants ADD COLUMN pairing_payload TEXT").run()
        try await sql.raw("ALTER TABLE oidc_grants ADD COLUMN pairing_key TEXT").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE oidc_grants DROP COLUMN pairing_key").run()
        try await sql.raw("ALTER TABLE oidc_grants DROP COLUMN pairing_payload").run()
        try await sql.raw("DROP TABLE pairing_payloads").run()
        try await sql.raw("ALTER TABLE pairing_keys DROP COLUMN bound_key").run()
    }
}

/// Which clients may pair authenticators (docs/PROTOCOL.md §6.11), and which the configuration file defines
/// (`oidc-clients`, applied at each start).
struct AddOIDCClientPairingAndManaged: AsyncMigration {
    var name: String { "2026-12-01-02-oidc-client-pairing-managed" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE oidc_clients ADD COLUMN pairing BIGINT NOT NULL DEFAULT 0").run()
        try await sql.raw("ALTER TABLE oidc_clients ADD COLUMN managed BIGINT NOT NULL DEFAULT 0").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE oidc_clients DROP COLUMN managed").run()
        try await sql.raw("ALTER TABLE oidc_clients DROP COLUMN pairing").run()
    }
}

/// Where a device is told of events while nothing of it is connected (docs/PROTOCOL.md §2.2): a Web Push
/// subscription or an APNs device token, one per device.
struct AddPushTargets: AsyncMigration {
    var name: String { "2026-12-02-01-push-targets" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw(
            """
            CREATE TABLE push_targets (device_id TEXT PRIMARY KEY, account_id TEXT NOT NULL, channel TEXT NOT NULL,
                address TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL, environment TEXT,
                created_at BIGINT NOT NULL)
            """
        ).run()
        try await sql.raw("CREATE INDEX push_targets_address ON push_targets (address)").run()
    }
    func revert(on db: any Database) async throws {
        try await (db as! any SQLDatabase).raw("DROP TABLE push_targets").run()
    }
}

/// Until when a device is seen through a live connection (ms; 0: not live), and which node's connection: its
/// events go over the connection, not as pushes.
struct AddPushTargetLiveUntil: AsyncMigration {
    var name: String { "2026-12-02-02-push-targets-live-until" }
    func prepare(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE push_targets ADD COLUMN live_until BIGINT NOT NULL DEFAULT 0").run()
        try await sql.raw("ALTER TABLE push_targets ADD COLUMN live_by TEXT").run()
    }
    func revert(on db: any Database) async throws {
        let sql = db as! any SQLDatabase
        try await sql.raw("ALTER TABLE push_targets DROP COLUMN live_by").run()
        try await sql.raw("ALTER TABLE push_targets DROP COLUMN live_until").run()
    }
}
