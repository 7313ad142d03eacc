import CountersignAPI

/// A username as accounts take it (``UsernameRule``). Parsing is the only way to make one.
public struct Username: Sendable, Hashable {
    /// The normalised (lower-case) name.
    public let text: String

    public init(parsing raw: String) throws {
        guard let u = UsernameRule.normalised(raw) else {
            throw RequestError.invalidField(field: "username", reason: UsernameRule.description)
        }
        text = u
    }
}
