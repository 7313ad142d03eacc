/// The storage of an account's recovery codes, by their hashes (`RecoveryCodes`).
public protocol RecoveryCodeStore: Sendable {
    func replaceRecoveryCodes(accountID: String, hashes: [String]) async throws
    /// Deletes the code; false when the account has no such code (wrong, or spent already).
    func spendRecoveryCode(accountID: String, hash: String) async throws -> Bool
    func recoveryCodesLeft(accountID: String) async throws -> Int
}
