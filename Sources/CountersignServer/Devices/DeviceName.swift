import Foundation

/// A device's name: 1 to 64 characters after trimming spaces, no control characters.
struct DeviceName: Sendable {
    let text: String

    init(parsing raw: String) throws {
        let s = raw.trimmingCharacters(in: .whitespaces)
        guard (1...64).contains(s.unicodeScalars.count),
            !s.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw RequestError.invalidField(field: "name", reason: "1 to 64 characters, no control characters")
        }
        text = s
    }
}
