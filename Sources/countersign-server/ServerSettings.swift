import ArgumentParser
import CountersignServer
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The server's settings and where each comes from, in one order: a flag wins over its environment variable
/// (`COUNTERSIGN_…`), which wins over the configuration file (`--config FILE`), which wins over the default.
///
/// The file is one JSON object. Its keys are the variables' names without `COUNTERSIGN_`, in lower case with
/// dashes: `COUNTERSIGN_PUBLIC_URL` is `public-url`. A key it does not know, or a value of the wrong kind, is
/// an error rather than a setting silently not applied.
struct ServerSettings {
    enum Kind { case text, number, flag, list }

    /// Every setting a file may hold, by environment variable.
    static let kinds: [String: Kind] = [
        "COUNTERSIGN_HOST": .text, "COUNTERSIGN_PORT": .number, "COUNTERSIGN_DATABASE": .text,
        "COUNTERSIGN_CAPTCHA": .text, "COUNTERSIGN_PUBLIC_URL": .text, "COUNTERSIGN_WEBAUTHN_ORIGINS": .list,
        "COUNTERSIGN_TRUSTED_PROXIES": .list, "COUNTERSIGN_TRUSTED_PROXY_HEADER": .text,
        "COUNTERSIGN_LOG_LEVEL": .text, "COUNTERSIGN_LOG_FORMAT": .text, "COUNTERSIGN_IDLE_TIMEOUT": .number,
        "COUNTERSIGN_READ_TIMEOUT": .number, "COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS": .number,
        "COUNTERSIGN_REGISTRATIONS_PER_ADDRESS": .number, "COUNTERSIGN_LOCKOUT_DELAY_AFTER": .number,
        "COUNTERSIGN_LOCKOUT_DELAY_MINUTES": .number, "COUNTERSIGN_LOCKOUT_LOCK_AFTER": .number,
        "COUNTERSIGN_CAPTCHA_RISK_MINUTES": .number, "COUNTERSIGN_SEND_BATCH": .number,
        "COUNTERSIGN_MESSAGE_RETENTION_DAYS": .number, "COUNTERSIGN_SENDS_PER_ACCOUNT": .number,
        "COUNTERSIGN_MESSAGE_QUOTA_MB": .number, "COUNTERSIGN_CONNECTIONS_PER_ADDRESS": .number,
        "COUNTERSIGN_AUTH_CODES_WITHOUT_APPROVAL": .flag, "COUNTERSIGN_METRICS_TOKEN_FILE": .text,
        "COUNTERSIGN_STAY_SIGNED_IN_DAYS": .number, "COUNTERSIGN_STAY_SIGNED_IN_HOURS_WITHOUT_DEVICE": .number,
        "COUNTERSIGN_ADMIN_CONTACT": .text, "COUNTERSIGN_PUSH_ALLOWED_HOSTS": .list,
        "COUNTERSIGN_VAPID_SUBJECT": .text, "COUNTERSIGN_APNS_KEY_FILE": .text, "COUNTERSIGN_APNS_KEY_ID": .text,
        "COUNTERSIGN_APNS_TEAM_ID": .text, "COUNTERSIGN_APNS_TOPIC": .text, "COUNTERSIGN_APNS_ENDPOINT": .text,
        "COUNTERSIGN_APNS_SANDBOX_ENDPOINT": .text, "COUNTERSIGN_APNS_CA_FILE": .text,
        "COUNTERSIGN_APNS_TIME_SENSITIVE": .flag,
    ]

    /// A file is a few hundred bytes; anything near this is not one.
    static let maximumFileSize = 64 << 10

    let environment: [String: String]
    let filePath: String?
    /// The file's values as the environment would give them, by variable name.
    private(set) var file: [String: String] = [:]
    /// The file's `oidc-clients` (a list of objects, the one structured setting), if it has the key.
    private(set) var oidcClients: [OIDCAdmin.Configured]?

    /// The value of a setting: the environment's, else the file's. An empty variable counts as unset (a
    /// leftover `COUNTERSIGN_TRUSTED_PROXIES=` must not empty the file's list).
    subscript(name: String) -> String? {
        precondition(Self.kinds[name] != nil, "\(name) is read but not listed in ServerSettings.kinds")
        if let value = environment[name], !value.isEmpty { return value }
        return file[name]
    }

    /// How a refusal names where a value came from: the variable, or the key in the file.
    func source(_ name: String) -> String {
        if environment[name]?.isEmpty ?? true, file[name] != nil, let filePath {
            return "\(Self.key(of: name)) in \(filePath)"
        }
        return name
    }

    static func key(of name: String) -> String {
        name.dropFirst("COUNTERSIGN_".count).lowercased().replacingOccurrences(of: "_", with: "-")
    }

    /// Reads the file at `path`, if any. Refusals say what is wrong and leave nothing started.
    static func load(path: String?, environment: [String: String]) throws -> ServerSettings {
        var settings = ServerSettings(environment: environment, filePath: path)
        guard let path else { return settings }
        var (data, readableByOthers) = try read(path)
        // Valid JSON first: the duplicate-key scan walks the text and assumes it.
        let parsed = try? JSONSerialization.jsonObject(with: data)
        if parsed != nil, let twice = duplicateKey(in: data) {
            throw ValidationError("the configuration file \(path) sets \(twice) twice; keep one")
        }
        // The one structured setting is read on its own; the rest are flat values.
        if var object = parsed as? [String: Any], let clients = object.removeValue(forKey: "oidc-clients") {
            settings.oidcClients = try OIDCClientSettings.parse(clients, path: path)
            data = try JSONSerialization.data(withJSONObject: object)
        }
        let values: [String: Value]
        do {
            values = try JSONDecoder().decode([String: Value].self, from: data)
        } catch {
            throw ValidationError(
                """
                the configuration file \(path) is not one JSON object of settings (e.g. {"port": 8080, \
                "database": "sqlite:/var/lib/countersign/countersign.sqlite"}): \(Self.describe(error))
                """
            )
        }
        let byKey = Dictionary(uniqueKeysWithValues: kinds.keys.map { (key(of: $0), $0) })
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            guard let name = byKey[key] else {
                let near = byKey.keys.min { distance(key, $0) < distance(key, $1) }
                let hint = near.map { distance(key, $0) <= 3 ? "did you mean \($0)? " : "" } ?? ""
                throw ValidationError(
                    "the configuration file \(path) has an unknown setting `\(key)`: \(hint)the settings are \((byKey.keys + ["oidc-clients"]).sorted().joined(separator: ", "))"
                )
            }
            settings.file[name] = try value.text(as: kinds[name]!, key: key, path: path)
        }
        if let database = settings.file["COUNTERSIGN_DATABASE"], database.contains("@"), readableByOthers {
            FileHandle.standardError.write(
                Data(
                    "warning: the configuration file \(path) names a database with credentials and every user may read it (chmod o-r \(path))\n"
                        .utf8
                )
            )
        }
        return settings
    }

    /// The file's bytes, read from one descriptor after checking what it is: a regular file of at most 64 KiB,
    /// owned by root or by this user, which no other user may write (whoever can write it chooses the database
    /// and whom the server trusts). Also says whether every user may read it.
    private static func read(_ path: String) throws -> (Data, readableByOthers: Bool) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            throw ValidationError("cannot read the configuration file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw ValidationError("the configuration file \(path) is not a regular file")
        }
        guard status.st_uid == 0 || status.st_uid == geteuid() else {
            throw ValidationError(
                "the configuration file \(path) belongs to another user (uid \(status.st_uid)); it must be root's or this user's"
            )
        }
        guard status.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw ValidationError(
                "the configuration file \(path) may be written by other users; make it theirs no more (chmod go-w \(path))"
            )
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while data.count <= maximumFileSize {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard n >= 0 else {
                throw ValidationError("cannot read the configuration file \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { return (data, status.st_mode & S_IROTH != 0) }
            data.append(contentsOf: buffer[..<n])
        }
        throw ValidationError("the configuration file \(path) is over 64 KiB: it is not a configuration file")
    }

    /// The first key given twice in one object, at any depth (an `oidc-clients` entry too), as JSON decodes it
    /// so that `"port"` and `"\u0070ort"` are the same key. `data` must be valid JSON.
    static func duplicateKey(in data: Data) -> String? {
        var objects: [Set<String>?] = []  // one entry per open bracket: a set for an object, nil for a list
        var i = data.startIndex
        while i < data.endIndex {
            switch data[i] {
            case UInt8(ascii: "{"): objects.append([])
            case UInt8(ascii: "["): objects.append(nil)
            case UInt8(ascii: "}"), UInt8(ascii: "]"): if !objects.isEmpty { objects.removeLast() }
            case UInt8(ascii: "\""):
                let start = i
                i += 1
                while i < data.endIndex, data[i] != UInt8(ascii: "\"") { i += data[i] == UInt8(ascii: "\\") ? 2 : 1 }
                guard i < data.endIndex else { return nil }
                var j = i + 1
                while j < data.endIndex, [0x20, 0x09, 0x0A, 0x0D].contains(data[j]) { j += 1 }
                if j < data.endIndex, data[j] == UInt8(ascii: ":"), var keys = objects.last ?? nil,
                    let key = try? JSONDecoder().decode(String.self, from: data[start...i])
                {
                    if !keys.insert(key).inserted { return key }
                    objects[objects.count - 1] = keys
                }
            default: break
            }
            i += 1
        }
        return nil
    }

    /// One value in the file, as JSON has it.
    enum Value: Decodable {
        case text(String)
        case number(Int)
        case flag(Bool)
        case list([String])

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let b = try? c.decode(Bool.self) {
                self = .flag(b)
            } else if let n = try? c.decode(Int.self) {
                self = .number(n)
            } else if let s = try? c.decode(String.self) {
                self = .text(s)
            } else if let l = try? c.decode([String].self) {
                self = .list(l)
            } else {
                throw DecodingError.typeMismatch(
                    Value.self,
                    .init(
                        codingPath: decoder.codingPath,
                        debugDescription: "a setting is a string, a whole number, true or false, or a list of strings"
                    )
                )
            }
        }

        func text(as kind: Kind, key: String, path: String) throws -> String {
            switch (kind, self) {
            case (.text, .text(let s)): return s
            case (.number, .number(let n)): return String(n)
            case (.flag, .flag(let b)): return b ? "1" : "0"
            case (.list, .list(let l)):
                guard l.allSatisfy({ !$0.contains(",") }) else {
                    throw ValidationError("\(key) in \(path): an entry has a comma; give each as its own string")
                }
                return l.joined(separator: ",")
            case (.list, .text(let s)): return s
            default:
                let wanted =
                    switch kind {
                    case .text: "a string"
                    case .number: "a whole number"
                    case .flag: "true or false"
                    case .list: "a list of strings"
                    }
                throw ValidationError("\(key) in \(path) takes \(wanted)")
            }
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.typeMismatch(_, let c), DecodingError.dataCorrupted(let c):
            let at = c.codingPath.map(\.stringValue).joined(separator: ".")
            return (at.isEmpty ? "" : "at \(at): ") + c.debugDescription
        default: return "\(error)"
        }
    }

    /// Levenshtein distance, for the nearest known key to a mistyped one.
    private static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in 1...max(b.count, 1) where !b.isEmpty {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return row[b.count]
    }
}
