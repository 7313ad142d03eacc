/// How an account session was authenticated, in RFC 8176's `amr` values (docs/PROTOCOL.md §5.6), as its
/// sign-in ended: what an ID token's `amr` and `acr` say and what a client's sign-in policy is checked against.
///
/// | sign-in                                     | amr                    |
/// |---------------------------------------------|------------------------|
/// | password                                    | pwd                    |
/// | password + authenticator app or passcode    | pwd otp mfa            |
/// | password + recovery code                    | pwd otp mfa            |
/// | password + push approval (number matching)  | pwd swk mfa            |
/// | password + passkey                          | pwd hwk user mfa       |
/// | passkey alone (user verified)               | hwk user mfa           |
/// | QR sign-in (an authenticator alone)         | swk                    |
///
/// `swk`: the push approval and the QR sign-in are signed by the paired authenticator's software key; `hwk` for
/// a passkey (the server does not tell a synced passkey from one bound to hardware; `user`: it verified the
/// user).
public enum SessionMethods {
    public static let passwordOnly = ["pwd"]

    static func of(_ outcome: AuditOutcome, passwordless: Bool, passkey: Bool) -> [String] {
        if passkey { return ["hwk", "user", "mfa"] }
        if passwordless { return ["swk"] }
        guard case .succeeded(let method) = outcome else { return passwordOnly }
        switch method {
        case .push: return ["pwd", "swk", "mfa"]
        case .code, .totp, .recoveryCode: return ["pwd", "otp", "mfa"]
        case .authCode: return ["swk"]
        case .passkey: return ["pwd", "hwk", "user", "mfa"]
        }
    }

    /// Whether the methods include a second factor, or a passkey that verified its user.
    public static func isMultiFactor(_ methods: [String]) -> Bool { methods.contains("mfa") }
    /// Whether nothing a phishing page could relay was used: a passkey.
    public static func isPhishingResistant(_ methods: [String]) -> Bool { methods.contains("hwk") }

    static func text(_ methods: [String]) -> String { methods.joined(separator: " ") }
    /// Stored text back to values; none stored (a session from before they were kept): the password.
    static func parse(_ text: String?) -> [String] {
        guard let text, !text.isEmpty else { return passwordOnly }
        return text.split(separator: " ").map(String.init)
    }
}
