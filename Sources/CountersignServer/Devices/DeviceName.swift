import Foundation

/// A device's name: 1 to 64 characters after trimming spaces, every one showable (`ShownName`).
struct DeviceName: Sendable {
    let text: String

    init(parsing raw: String) throws {
        let s = raw.trimmingCharacters(in: .whitespaces)
        guard (1...64).contains(s.unicodeScalars.count) else {
            throw RequestError.invalidField(field: "name", reason: ShownName.rule)
        }
        if let problem = ShownName.problem(s) {
            throw RequestError.invalidField(field: "name", reason: problem)
        }
        text = s
    }
}
