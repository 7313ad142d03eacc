/// A username as accounts take it: 3 to 32 characters of a-z, 0-9, '.', '_' and '-', starting and ending
/// with a letter or digit, compared in lower case. Parsing is the only way to make one.
public struct Username: Sendable, Hashable {
    /// The normalised (lower-case) name.
    public let text: String

    public init(parsing raw: String) throws {
        // ASCII first: lowercased() maps some non-ASCII letters (the Kelvin sign) to ASCII ones.
        let u = raw.unicodeScalars.allSatisfy(\.isASCII) ? raw.lowercased() : ""
        guard (3...32).contains(u.count), u.allSatisfy(Self.allowed.contains), let f = u.first, let l = u.last,
            Self.alphanumeric.contains(f), Self.alphanumeric.contains(l)
        else {
            throw RequestError.invalidField(
                field: "username",
                reason: "3 to 32 characters of a-z, 0-9, '.', '_' and '-', starting and ending with a letter or digit"
            )
        }
        text = u
    }

    private static let alphanumeric = Set("abcdefghijklmnopqrstuvwxyz0123456789")
    private static let allowed = alphanumeric.union("._-")
}
