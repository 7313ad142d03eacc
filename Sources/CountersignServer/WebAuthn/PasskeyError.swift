import CountersignCrypto

/// Why a passkey ceremony was refused (docs/PROTOCOL.md §5). Closed: routes map each case to one problem.
enum PasskeyError: Error, Equatable, Sendable {
    /// No such ceremony, another kind, another account or session, or past its 5 minutes.
    case ceremonyNotFound
    /// The client data's type, challenge, origin or cross-origin flag is not the ceremony's.
    case clientData(String)
    /// The authenticator data is for another RP ID, or lacks user presence or verification.
    case authenticator(String)
    /// The bytes themselves (CBOR, COSE, layout) or a signature.
    case data(WebAuthnError)
    /// The credential is not a stored passkey (of this account, when the account is known).
    case unknownCredential
    /// The credential ID is already registered (to any account).
    case credentialTaken
    /// The account already has `PasskeyRules.maxPerAccount` passkeys.
    case tooManyPasskeys
    /// The backup-eligible flag differs from the one registered: not the same credential.
    case backupEligibilityChanged
    /// A passkey's name must be 1 to 64 characters without control characters.
    case invalidName
    /// The signature counter did not increase on a device-bound credential: possibly a clone.
    case counterNotIncreasing(stored: UInt32, received: UInt32)
    /// Another assertion by the same passkey was recorded while this one was checked.
    case concurrentUse
    /// The account has no passkey to ask for.
    case noPasskeys
    /// No such passkey on this account (rename, remove).
    case notFound
    /// The answer carried the PRF extension's output, the key gate's secret, which never leaves the
    /// browser (docs/SPEC.md §14.7): refused before anything is judged, so that no client regresses.
    case prfResultsSent
}
