import CountersignCrypto

/// otpauth:// URIs, as scanned from a QR code or pasted.
enum FuzzOTP {
    /// What parses has a canonical URI that parses to the same value, and is its own canonical form.
    static func otpauth(_ data: [UInt8]) {
        guard let parsed = try? OTPAuthURI(parsing: FuzzKeys.text(data)) else { return }
        let canonical = parsed.uri
        guard let again = try? OTPAuthURI(parsing: canonical) else {
            finding("the canonical URI \(canonical) does not parse")
        }
        guard again == parsed else { finding("the canonical URI \(canonical) parses to another value") }
        guard again.uri == canonical else { finding("the canonical URI \(canonical) is not its own canonical form") }
        _ = parsed.generator.code(counter: 1)
    }
}
