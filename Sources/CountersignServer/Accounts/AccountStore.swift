import CountersignAPI
import Foundation

/// An account as stored. The password hash never leaves the server.
public struct AccountRecord: Equatable, Sendable {
    public var id: String
    public var username: String
    public var name: String
    public var lastname: String
    public var passwordHash: String
    public var reauthMinutes: Int
    public var createdAt: Date
}

/// The storage the account service needs, and nothing more. Each backend's storage implements it; each
/// method is atomic.
public protocol AccountStore: ServerSecretStore {
    /// Inserts the account and clears any lockout state left under its username. Throws
    /// `AccountError.usernameTaken` when the username exists.
    func createAccount(_ account: AccountRecord) async throws
    func account(username: String) async throws -> AccountRecord?
    /// Up to `limit` usernames, in order: for the operator's commands that must know what a database holds.
    func usernames(limit: Int) async throws -> [String]
    func account(id: String) async throws -> AccountRecord?
    /// The accounts with these usernames (absent ones are left out).
    func accounts(usernames: [String]) async throws -> [AccountRecord]
    func setPasswordHash(_ hash: String, accountID: String) async throws
    /// A password change: the new hash, and the end of every session of the account but `keepingSession`
    /// and of all its device sessions, in one transaction.
    func changePassword(_ hash: String, accountID: String, keepingSession: String) async throws
    func setReauthMinutes(_ minutes: Int, accountID: String) async throws

    /// Clears the lockout state; false when the username has none.
    func unlock(username: String) async throws -> Bool

    /// Deletes sessions past their absolute or idle lifetime and spent captchas past expiry.
    func purgeExpired(now: Date, idle: TimeInterval) async throws
}
