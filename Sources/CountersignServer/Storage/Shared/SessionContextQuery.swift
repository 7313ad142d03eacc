/// The device-session read that starts every device request, by position (columns 0–5 the session,
/// 6–16 the device, 17–23 the account, 24 the device's kind): one text for the direct SQLite reader and
/// PostgreSQL's prepared statement, which differ only in how the token hash is bound.
enum SessionContextQuery {
    static func sql(tokenHashParameter p: String) -> String {
        """
        SELECT s.token_hash, s.device_id, s.account_id, s.created_at, s.last_used_at, s.expires_at,
               d.id, d.account_id, d.name, d.signing_key, d.signing_key_id, d.encryption_key, d.encryption_key_id, d.created_at,
               d.keys_since, d.last_seen_at, d.revoked_at,
               a.id, a.username, a.name, a.lastname, a.password_hash, a.reauth_minutes, a.created_at, d.kind
        FROM device_sessions s JOIN devices d ON d.id = s.device_id JOIN accounts a ON a.id = s.account_id
        WHERE s.token_hash = \(p)
        """
    }
}
