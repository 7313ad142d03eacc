import Foundation

/// A person's name or last name: 1 to 100 characters after trimming spaces, no control characters.
/// `field` names the field a refusal is about.
struct PersonName: Sendable {
    let text: String

    init(parsing raw: String, field: String) throws {
        let s = raw.trimmingCharacters(in: .whitespaces)
        guard (1...100).contains(s.unicodeScalars.count),
            !s.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw RequestError.invalidField(field: field, reason: "1 to 100 characters, no control characters")
        }
        text = s
    }
}
