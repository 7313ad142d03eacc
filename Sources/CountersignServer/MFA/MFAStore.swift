import Foundation

/// The storage of multi-factor sign-in, whole: every narrow store of the feature, which `MFAService`
/// takes one by one, and the purge of what expired. Each backend's storage implements it
/// (`ServerStorage`). Versioned values (account state, transactions, authentication codes) change only
/// by compare-and-set on their version.
public protocol MFAStore: MFAStateStore, AuthenticatorStore, PairingStore, MFATransactionStore, RecoveryCodeStore,
    AuthenticationCodeStore, ServerSecretStore
{
    func purgeExpiredMFA(now: Date) async throws
}
