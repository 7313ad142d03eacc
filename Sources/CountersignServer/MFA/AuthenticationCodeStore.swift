import Foundation

/// The storage of QR sign-in codes (`AuthenticationCode`), by the hash of the code and of the
/// browser's binding. A code changes only by compare-and-set on its version.
public protocol AuthenticationCodeStore: Sendable {
    func createAuthCode(hash: String, bindingHash: String, state: Data, expiresAt: Date) async throws
    func authCode(hash: String) async throws -> (state: Data, version: Int64)?
    func authCode(bindingHash: String) async throws -> (hash: String, state: Data, version: Int64)?
    func updateAuthCode(hash: String, state: Data, expected: Int64) async throws -> Bool
}
