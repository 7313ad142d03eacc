/// What one node tells every node (itself included) about the push channel. Carried in-process on
/// SQLite and by PostgreSQL NOTIFY between nodes, as `KIND:ID,ID…` (ids never contain `:` or `,`).
package enum PushSignal: Sendable, Equatable {
    /// These accounts have entries that are due now: their connected devices and long polls look.
    case due(accounts: [String])
    /// Close what runs on this ending's behalf (4403).
    case ended(SessionEnding)
    /// These authenticators have a new MFA challenge: their connections send it.
    case challenge(devices: [String])
    /// A device connected (on some node) with this connection id: any other connection of it closes (4409).
    case connected(deviceID: String, connectionID: String)
    /// This MFA transaction changed (answered, failed, collected): the sign-in client's long poll looks.
    case transaction(id: String)
    /// This authentication code was claimed, approved or denied: the waiting screen's long poll looks.
    case authCode(hash: String)

    var text: String {
        switch self {
        case .due(let accounts): "w:" + accounts.joined(separator: ",")
        case .ended(.account(let id)): "a:" + id
        case .ended(.device(let id)): "d:" + id
        case .ended(.deviceSession(let hash)): "s:" + hash
        case .ended(.otherDeviceSessions(let device, let keeping)): "o:" + device + "," + keeping
        case .connected(let device, let connection): "c:" + device + "," + connection
        case .challenge(let devices): "m:" + devices.joined(separator: ",")
        case .transaction(let id): "t:" + id
        case .authCode(let hash): "q:" + hash
        }
    }

    init?(text: String) {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let kind = text[..<colon]
        let rest = String(text[text.index(after: colon)...])
        switch kind {
        case "w": self = .due(accounts: rest.split(separator: ",").map(String.init))
        case "a": self = .ended(.account(rest))
        case "d": self = .ended(.device(rest))
        case "s": self = .ended(.deviceSession(tokenHash: rest))
        case "o":
            let parts = rest.split(separator: ",")
            guard parts.count == 2 else { return nil }
            self = .ended(.otherDeviceSessions(deviceID: String(parts[0]), keeping: String(parts[1])))
        case "m": self = .challenge(devices: rest.split(separator: ",").map(String.init))
        case "t": self = .transaction(id: rest)
        case "q": self = .authCode(hash: rest)
        case "c":
            let parts = rest.split(separator: ",")
            guard parts.count == 2 else { return nil }
            self = .connected(deviceID: String(parts[0]), connectionID: String(parts[1]))
        default: return nil
        }
    }

    /// Signals whose text fits in one NOTIFY payload (PostgreSQL's limit is 8000 bytes): a long list of
    /// accounts is split.
    func chunked(maxBytes: Int = 7000) -> [PushSignal] {
        guard case .due(let accounts) = self, text.utf8.count > maxBytes else { return [self] }
        var out: [PushSignal] = []
        var current: [String] = []
        var size = 2
        for a in accounts {
            if size + a.utf8.count + 1 > maxBytes, !current.isEmpty {
                out.append(.due(accounts: current))
                current = []
                size = 2
            }
            current.append(a)
            size += a.utf8.count + 1
        }
        if !current.isEmpty { out.append(.due(accounts: current)) }
        return out
    }
}
