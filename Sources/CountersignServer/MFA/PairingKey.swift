import CountersignCrypto
import Crypto
import Foundation

/// A pairing key (docs/PROTOCOL.md §3): 12 symbols, single use, 10 minutes, at most 3 open per account.
/// What the store keeps is its hash; redeeming answers the same for wrong, used and expired keys.
struct PairingKey: Equatable, Sendable {
    static let length = 12
    static let lifetime: TimeInterval = 600
    static let maxOpenPerAccount = 3

    let hash: String
    let accountID: String
    let expiresAt: Date
    private(set) var used = false

    init(hash: String, accountID: String, now: Date) {
        self.hash = hash
        self.accountID = accountID
        expiresAt = now.addingTimeInterval(Self.lifetime)
    }

    /// A new key's text and its record.
    static func make(accountID: String, now: Date, random: any RandomSource) -> (text: String, record: PairingKey) {
        let text = HumanCode.generate(length: length, random: random)
        return (text, PairingKey(hash: hash(text), accountID: accountID, now: now))
    }

    /// As session tokens are hashed: the key is random, so a fast hash suffices.
    static func hash(_ normalized: String) -> String { TokenHash.hex(normalized) }

    /// The key in what someone typed or scanned: bare (any case, dashes and spaces allowed) or the `key`
    /// of a `countersign://pair?key=…` URI.
    static func parse(_ input: String) -> String? { HumanCode.extract(input, queryItem: "key", length: length) }

    /// A pairing grant from an ID token (docs/PROTOCOL.md §6.11): `cso_pg_` and 43 base64url characters, as sent.
    static func parseGrant(_ input: String) -> String? {
        let text = input.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix(grantPrefix), text.utf8.count == grantPrefix.utf8.count + 43,
            text.dropFirst(grantPrefix.count).allSatisfy({
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_")
            })
        else { return nil }
        return text
    }
    static let grantPrefix = "cso_pg_"

    /// What a grant is bound to: SHA-256 hex of the signing key's SPKI DER.
    static func boundKey(_ key: PublicKey) -> String { Hex.encode(SHA256.hash(data: key.spkiDER)) }

    func isOpen(at now: Date) -> Bool { !used && now < expiresAt }

    /// Spends the key; the account it pairs with, or nil (wrong account is impossible: the hash is the key).
    mutating func redeem(now: Date) -> String? {
        guard isOpen(at: now) else { return nil }
        used = true
        return accountID
    }

    /// Whether the account may open another key now.
    static func mayCreate(open: [PairingKey], now: Date) -> Bool {
        open.filter { $0.isOpen(at: now) }.count < maxOpenPerAccount
    }
}
