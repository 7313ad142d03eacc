/// `secondFactor` of a sign-in or re-authentication request: `code` (the client will give a passcode or
/// a recovery code) asks for no push; `push` or none, the default.
enum SecondFactorChoice {
    static func offerPush(_ secondFactor: String?) throws -> Bool {
        switch secondFactor {
        case nil, "push": return true
        case "code": return false
        case let other?:
            throw RequestError.invalidField(
                field: "secondFactor",
                reason: "push or code, not \(String(other.prefix(32)).debugDescription)"
            )
        }
    }
}
