/// The rule every username follows, shared by the server, which refuses other names, and by clients, which
/// check a name before any network or captcha work: 3 to 32 characters of a-z, 0-9, '.', '_' and '-',
/// starting and ending with a letter or digit, compared in lower case.
public enum UsernameRule {
    /// The rule in words, as refusals say it.
    public static let description =
        "3 to 32 characters of a-z, 0-9, '.', '_' and '-', starting and ending with a letter or digit"

    /// The normalised (lower-case) name, or nil when `raw` breaks the rule.
    public static func normalised(_ raw: String) -> String? {
        // ASCII first: lowercased() maps some non-ASCII letters (the Kelvin sign) to ASCII ones.
        guard raw.unicodeScalars.allSatisfy(\.isASCII) else { return nil }
        let u = raw.lowercased()
        guard (3...32).contains(u.count), u.allSatisfy(allowed.contains), let f = u.first, let l = u.last,
            alphanumeric.contains(f), alphanumeric.contains(l)
        else { return nil }
        return u
    }

    private static let alphanumeric = Set("abcdefghijklmnopqrstuvwxyz0123456789")
    private static let allowed = alphanumeric.union("._-")
}
