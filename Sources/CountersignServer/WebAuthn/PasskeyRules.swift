import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation

/// The checks of docs/PROTOCOL.md §5.2 and §5.3, as pure functions of the ceremony, the stored state and
/// the response. Storage, the single use of the ceremony and lockout counting are the service's.
enum PasskeyRules {
    static let maxPerAccount = 10

    /// A new passkey's ID from 16 random bytes, in base64url. One in 64 would start with '-', which a
    /// command line reads as an option (`countersign account passkeys remove ID`): such a first byte
    /// (0xF8…0xFB) loses its top bit, and the ID starts with 'e' instead. IDs name, they are not secrets.
    static func newID(_ random: [UInt8]) -> String {
        var bytes = random
        if let first = bytes.first, first >> 2 == 62 { bytes[0] = first & 0x7F }
        return Base64URL(bytes).text
    }

    /// Refuses an answer that carries a PRF output: with a copy of the browser profile it opens the key
    /// gate, so it must never reach the server or anything that sees request bodies (SPEC §14.7).
    /// `prf.enabled` alone is harmless.
    static func refuseSecrets(_ outputs: PasskeyClientExtensionOutputs?) throws {
        if outputs?.prf?.results != nil { throw PasskeyError.prfResultsSent }
    }

    /// What a registration response carries, decoded from base64url.
    struct Registration {
        var rawID: [UInt8]
        var clientDataJSON: [UInt8]
        var attestationObject: [UInt8]
        var transports: [String]
    }

    /// What an assertion response carries.
    struct Assertion {
        var rawID: [UInt8]
        var clientDataJSON: [UInt8]
        var authenticatorData: [UInt8]
        var signature: [UInt8]
        var userHandle: [UInt8]?
    }

    struct Verified: Equatable {
        var signCount: UInt32
        var backedUp: Bool
        var userVerified: Bool
    }

    static func checkClientData(
        _ bytes: [UInt8],
        type: String,
        ceremony: PasskeyCeremony,
        rp: RelyingParty
    ) throws(PasskeyError) -> ClientData {
        let client: ClientData
        do { client = try ClientData(parsing: bytes) } catch { throw .data(error) }
        guard Array(client.type.utf8) == Array(type.utf8) else {
            throw .clientData("type is \(client.type), not \(type)")
        }
        let expected = Array(Base64URL(ceremony.challenge).text.utf8)
        guard ConstantTime.equal(Array(client.challenge.utf8), expected) else {
            throw .clientData("the challenge is not this ceremony's")
        }
        guard rp.accepts(origin: client.origin) else { throw .clientData("origin \(client.origin) is not accepted") }
        guard !client.crossOrigin else { throw .clientData("a cross-origin request") }
        return client
    }

    static func checkFlags(_ data: AuthenticatorData, rp: RelyingParty) throws(PasskeyError) {
        guard ConstantTime.equal(data.rpIDHash, rp.idHash) else {
            throw .authenticator("the credential is for another RP ID than \(rp.id)")
        }
        guard data.flags.contains(.userPresent) else { throw .authenticator("user presence is not set") }
        guard data.flags.contains(.userVerified) else { throw .authenticator("user verification is not set") }
    }

    static let maxTransports = 8

    /// A new passkey for `accountID`, which has `existingCount` passkeys, answering `ceremony` of the
    /// session `boundTo`. Whether the credential ID is taken is the store's check (a unique index).
    static func verifyRegistration(
        _ r: Registration,
        ceremony: PasskeyCeremony,
        accountID: String,
        boundTo: String?,
        existingCount: Int,
        rp: RelyingParty,
        now: Date
    ) throws(PasskeyError) -> NewPasskey {
        guard ceremony.accountID == accountID,
            ceremony.admits(kind: .registration, accountID: accountID, boundTo: boundTo, now: now)
        else { throw .ceremonyNotFound }
        guard r.transports.count <= maxTransports,
            r.transports.allSatisfy({ t in
                (1...32).contains(t.utf8.count) && t.utf8.allSatisfy { $0 == 0x2D || (0x61...0x7A).contains($0) }
            })
        else { throw .data(.malformed("transports must be at most 8 lowercase names such as usb or internal")) }
        let client = try checkClientData(r.clientDataJSON, type: "webauthn.create", ceremony: ceremony, rp: rp)
        let object: AttestationObject
        do {
            object = try AttestationObject(decoding: r.attestationObject)
            try object.verify(clientDataHash: client.hash)
        } catch { throw .data(error) }
        let data = object.authenticatorData
        try checkFlags(data, rp: rp)
        let credential = object.credential
        guard credential.credentialID == r.rawID else {
            throw .data(.malformed("the credential ID in the authenticator data is not the response's rawId"))
        }
        guard existingCount < maxPerAccount else { throw .tooManyPasskeys }
        return NewPasskey(
            credentialID: credential.credentialID,
            publicKey: credential.publicKey.encoded,
            aaguid: credential.aaguid,
            flags: data.flags,
            signCount: data.signCount,
            transports: r.transports
        )
    }

    /// What a verified registration adds: the credential, and how the store will keep it.
    struct NewPasskey: Equatable {
        var credentialID: [UInt8]
        var publicKey: [UInt8]
        var aaguid: [UInt8]
        var flags: AuthenticatorData.Flags
        var signCount: UInt32
        var transports: [String]

        func stored(id: String, accountID: String, name: String, prfSalt: [UInt8], at now: Date) -> StoredPasskey {
            StoredPasskey(
                id: id,
                accountID: accountID,
                credentialID: credentialID,
                publicKey: publicKey,
                signCount: signCount,
                backupEligible: flags.contains(.backupEligible),
                backedUp: flags.contains(.backedUp),
                aaguid: aaguid,
                transports: transports,
                name: name,
                createdAt: now,
                lastUsedAt: nil,
                prfSalt: prfSalt
            )
        }
    }

    /// Checks an assertion by `stored` (found by the response's credential ID) for `ceremony`, which must
    /// be of `kind`, bound to `boundTo`, not expired, and for `stored`'s account when it names one.
    /// `userHandle` is that account's WebAuthn user handle: a discoverable sign-in (no account named)
    /// must send it.
    static func verifyAssertion(
        _ a: Assertion,
        ceremony: PasskeyCeremony,
        kind: PasskeyCeremony.Kind,
        boundTo: String?,
        stored: StoredPasskey,
        userHandle: [UInt8],
        rp: RelyingParty,
        now: Date
    ) throws(PasskeyError) -> Verified {
        guard ceremony.admits(kind: kind, accountID: stored.accountID, boundTo: boundTo, now: now) else {
            throw .ceremonyNotFound
        }
        guard ConstantTime.equal(a.rawID, stored.credentialID) else { throw .unknownCredential }
        switch a.userHandle {
        case nil where ceremony.accountID == nil: throw .unknownCredential
        case let handle? where !ConstantTime.equal(handle, userHandle): throw .unknownCredential
        default: break
        }
        let client = try checkClientData(a.clientDataJSON, type: "webauthn.get", ceremony: ceremony, rp: rp)
        let data: AuthenticatorData
        do { data = try AuthenticatorData(parsing: a.authenticatorData) } catch { throw .data(error) }
        guard data.attested == nil else { throw .data(.malformed("an assertion with attested credential data")) }
        try checkFlags(data, rp: rp)
        guard data.flags.contains(.backupEligible) == stored.backupEligible else { throw .backupEligibilityChanged }
        let key: COSEKey
        do {
            key = try COSEKey(decoding: stored.publicKey)
            try WebAuthnAssertion.verify(signature: a.signature, authenticatorData: data, clientData: client, key: key)
        } catch { throw .data(error) }
        let count = data.signCount
        if (count != 0 || stored.signCount != 0) && count <= stored.signCount && !stored.backupEligible {
            throw .counterNotIncreasing(stored: stored.signCount, received: count)
        }
        return Verified(
            signCount: max(count, stored.signCount),
            backedUp: data.flags.contains(.backedUp),
            userVerified: data.flags.contains(.userVerified)
        )
    }
}
