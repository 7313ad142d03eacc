/// A password an account may be given: 8 to 128 characters (Unicode code points, as JSON Schema counts
/// them), and not the username.
struct NewPassword: Sendable {
    let text: String

    init(parsing raw: String, username: String) throws {
        guard (8...128).contains(raw.unicodeScalars.count) else {
            throw RequestError.invalidField(field: "password", reason: "8 to 128 characters")
        }
        guard raw.lowercased() != username.lowercased() else {
            throw RequestError.invalidField(field: "password", reason: "must not be the username")
        }
        text = raw
    }
}
