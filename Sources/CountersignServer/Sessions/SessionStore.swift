import Foundation

/// The storage the session service needs: account sessions (`cs_…`) and device sessions (`csd_…`), by
/// the SHA-256 of their tokens. Each backend's storage implements it; each method is atomic. A session
/// starts elsewhere when it must start in one transaction with something else (a sign-in's lockout
/// reset: `SignInStore.startSession`).
public protocol SessionStore: Sendable {
    func createSession(_ session: SessionRecord) async throws
    func session(tokenHash: String) async throws -> SessionRecord?
    /// The account a session belongs to.
    func account(id: String) async throws -> AccountRecord?
    func touchSession(tokenHash: String, at: Date) async throws
    func markReauthenticated(tokenHash: String, at: Date, methods: [String]) async throws
    func deleteSession(tokenHash: String) async throws
    /// Ends a session and, when it is a browser's bound one, its binding and every session started from it
    /// (docs/PROTOCOL.md §1.1), in one transaction.
    func endSession(tokenHash: String) async throws
    /// Ends every session of the account but `keeping`, and every device session of the account.
    func deleteSessions(accountID: String, keeping: String?) async throws

    func createDeviceSession(_ session: DeviceSessionRecord) async throws
    func deviceSession(tokenHash: String) async throws -> DeviceSessionRecord?
    /// The session with its device and account, in one read (every device request starts with it).
    func deviceSessionContext(tokenHash: String) async throws -> (DeviceSessionRecord, DeviceRecord, AccountRecord)?
    func touchDeviceSession(tokenHash: String, at: Date) async throws
    /// A used session's device was seen: kept with the session's touch, once a minute at most.
    func touchDevice(id: String, at: Date) async throws
    func deleteDeviceSession(tokenHash: String) async throws
    /// Deletes every session of the device but `keeping`.
    func deleteDeviceSessions(deviceID: String, keeping: String) async throws
}
