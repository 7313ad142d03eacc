import Foundation

/// The storage session bindings need (docs/PROTOCOL.md §1.1). Every ending of an account's sessions (sign
/// out everywhere, a password change, a lock, a removed passkey) deletes its bindings in the same
/// transaction; these are the binding's own reads and writes.
public protocol SessionBindingStore: Sendable {
    /// Stores `binding` and marks the session `tokenHash` as bound to it; a binding with the same ID (the
    /// session's own, rebound to its device's key) is replaced, and one to the same device (an earlier
    /// sign-in of the same browser) is kept under its ID. The account's least recently used bindings beyond
    /// `keep` end. Returns the binding's ID, or nil when the session ended meanwhile (nothing is stored).
    func bind(_ binding: SessionBindingRecord, sessionTokenHash: String, keep: Int) async throws -> String?
    func binding(id: String) async throws -> SessionBindingRecord?
    /// Starts `session` (whose `bindingID` is set) if its binding still exists, touches the binding, and
    /// ends the binding's sessions beyond the `keep` most recently used. False: the binding was gone.
    func resume(_ session: SessionRecord, keep: Int) async throws -> Bool
    /// Deletes the binding and every session started from it (this browser signing out in all its tabs).
    func deleteBinding(id: String) async throws
    /// Deletes bindings unused for `idle` (`idleWithoutDevice` for those without a device); every binding when
    /// `idle` is 0 (staying signed in turned off).
    func purgeIdleBindings(now: Date, idle: TimeInterval, idleWithoutDevice: TimeInterval) async throws

    func createChallenge(hash: String, kind: String, subject: String, expiresAt: Date) async throws
    /// Stores the challenge as the only one of its kind for `subject` (earlier ones deleted).
    func replaceChallenge(hash: String, kind: String, subject: String, expiresAt: Date) async throws
    /// Deletes the challenge and says whether it existed for one of `kinds` and this subject, unexpired.
    func spendChallenge(hash: String, kinds: Set<String>, subject: String, now: Date) async throws -> Bool
    func device(id: String) async throws -> DeviceRecord?
    func account(id: String) async throws -> AccountRecord?
}
