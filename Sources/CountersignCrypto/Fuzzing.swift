import Crypto

/// Entry points for the fuzz targets in `Fuzz/` (scripts/fuzz.sh) into parsers that are internal here.
/// Each one only forwards: no behaviour of its own. `@_spi` keeps them out of the public API; only code that
/// writes `@_spi(Fuzzing) import CountersignCrypto` sees them.
@_spi(Fuzzing) public enum Fuzzing {
    /// A PKCS#8 `PrivateKeyInfo` (DER), as `Identity(pem:)` reads a `PRIVATE KEY`.
    public static func identity(pkcs8 der: [UInt8]) throws -> Identity {
        try Identity(pkcs8: der)
    }

    /// A PKCS#8 `EncryptedPrivateKeyInfo` (DER) decrypted, with the key derivation's work bounded lower
    /// than the defaults so that one input cannot take seconds.
    public static func decryptPKCS8(
        _ der: [UInt8],
        passphrase: [UInt8],
        maxScryptMemoryBytes: Int,
        maxIterations: Int
    ) throws -> [UInt8] {
        try PKCS8Encryption.decrypt(
            der,
            passphrase: passphrase,
            maxScryptMemoryBytes: maxScryptMemoryBytes,
            maxIterations: maxIterations
        )
    }

    /// The key algorithm a `SubjectPublicKeyInfo` or `PrivateKeyInfo` names, as error messages say it.
    public static func keyAlgorithmNames(_ der: [UInt8]) -> (spki: String?, pkcs8: String?) {
        (OID.name(ofSPKI: der), OID.name(ofPKCS8: der))
    }

    /// A FileLock package's wrapped key (§3.2), opened the way `FileLockPackage.open` does.
    public static func openWrappedKey(_ wrapped: [UInt8], with identity: Identity) throws -> [UInt8]? {
        try AppleECIES.open(wrapped, with: identity, hash: SHA256.self)
    }
}
