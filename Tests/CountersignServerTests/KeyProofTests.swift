import CountersignAPI
import CountersignCrypto
import Foundation
import Testing

@testable import CountersignClient
@testable import CountersignServer

/// Key proofs (docs/PROTOCOL.md §1.3): the directory publishes each key's own signature over the registration
/// or rotation that brought it in, naming its encryption key, so that a contact checks the signing key chose
/// the encryption key it seals to. On both backends.
@Suite(.closesStorage) struct KeyProofTests {
    /// A new account `username` with a device of a browser's shape (one key signs, another opens), its device
    /// session open on the client returned.
    static func browserDevice(
        _ username: String,
        server: URL
    ) async throws -> (
        sdk: CountersignClient, account: Account, signing: Identity, encryption: Identity, device: Device
    ) {
        let sdk = CountersignClient(server: server)
        try await sdk.register(username: username, password: "correct horse", name: "D", lastname: "E")
        try await sdk.signIn(username: username, password: "correct horse")
        let account = try await sdk.me()
        let signing = Identity.generate()
        let encryption = Identity.generate()
        let device = try await sdk.registerDevice(
            name: "browser",
            signing: signing,
            encryptionKey: encryption.publicKey
        )
        try await sdk.openDeviceSession(deviceID: device.id, signing: signing)
        return (sdk, account, signing, encryption, device)
    }

    @Test(arguments: Backend.available)
    func registrationAndRotationProofsArePublishedAndCheck(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let (sdk, account, signing, encryption, device) = try await Self.browserDevice("dana", server: server)
            let reader = try await Person.make("erin", server: server)

            let first = try await reader.sdk.directory(username: "dana")
            let proof = try #require(first.history.first?.keyProof)
            #expect(proof.statement == KeyProof.registration && proof.accountId == account.id)
            #expect(proof.challenge?.bytes.count == 32 && proof.previousSigningKey == nil)
            #expect(KeyPins.keysProven(first.devices[0], in: first))
            #expect(
                try KeyPins.devices(of: first, ownUsername: "erin", ownDeviceID: nil, ownKeyID: nil).map(
                    \.encryptionKeyId
                )
                    == [Hex.encode(encryption.publicKey.fingerprint.bytes)]
            )

            h.clock.advance(60)
            let signing2 = Identity.generate()
            let encryption2 = Identity.generate()
            _ = try await sdk.rotateKeys(
                deviceID: device.id,
                old: signing,
                newSigning: signing2,
                newEncryptionKey: encryption2.publicKey
            )
            try await sdk.openDeviceSession(deviceID: device.id, signing: signing2)
            let rotated = try await reader.sdk.directory(username: "dana")
            #expect(rotated.history.count == 2)
            let second = try #require(rotated.history.last?.keyProof)
            #expect(second.statement == KeyProof.rotation && second.challenge == nil && second.accountId == nil)
            #expect(second.previousSigningKey?.bytes == signing.publicKey.spkiDER)
            #expect(rotated.history.first?.keyProof == proof, "the first key keeps its registration proof")
            #expect(KeyPins.keysProven(rotated.devices[0], in: rotated))

            // What a server swapping the encryption key would publish is refused by the reader.
            var swapped = rotated
            swapped.devices[0].encryptionKey = Base64URL(Identity.generate().publicKey.spkiDER)
            #expect(!KeyPins.keysProven(swapped.devices[0], in: swapped))
            #expect(throws: PinError.self) {
                try KeyPins.devices(of: swapped, ownUsername: "erin", ownDeviceID: nil, ownKeyID: nil)
            }
        }
    }
}

extension KeyProofTests {
    /// A device registered before servers kept proofs (its proof cleared here, as the migration leaves such
    /// rows) is refused by readers until it gives one for its current keys; a wrong signature, another
    /// account's statement or a short challenge gives none, and a key that has a proof keeps it.
    @Test(arguments: Backend.available)
    func aDeviceRegisteredWithoutAProofGivesOne(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let (sdk, account, signing, encryption, device) = try await Self.browserDevice("olga", server: server)
            try await h.storage.writeTransaction { sql in
                try await sql.raw(
                    "UPDATE device_keys SET key_signature = NULL, registration_challenge = NULL WHERE device_id = \(bind: device.id)"
                ).run()
            }
            let reader = try await Person.make("pavel", server: server)
            func proven() async throws -> Bool {
                let d = try await reader.sdk.directory(username: "olga")
                return KeyPins.keysProven(d.devices[0], in: d)
            }
            #expect(try await !proven(), "a legacy key has no proof")
            let challenge = [UInt8](repeating: 9, count: 32)
            func put(_ body: KeyProofRequest) async throws -> Int {
                do {
                    try await sdk.send("PUT", "/v1/devices/current/key-proof", body: body, credential: .device)
                    return 204
                } catch ClientError.problem(let p) {
                    return p.status
                }
            }
            func sign(_ account: String, _ bytes: [UInt8], by key: Identity) throws -> Base64URL {
                Base64URL(
                    try key.signature(
                        for: DeviceProof.registrationMessage(
                            challenge: bytes,
                            accountID: account,
                            signingKey: signing.publicKey,
                            encryptionKey: encryption.publicKey
                        )
                    )
                )
            }
            let stranger = Identity.generate()
            #expect(
                try await put(
                    KeyProofRequest(
                        challenge: Base64URL(challenge),
                        signature: sign(account.id, challenge, by: stranger)
                    )
                )
                    == 422
            )
            #expect(
                try await put(
                    KeyProofRequest(challenge: Base64URL(challenge), signature: sign("another", challenge, by: signing))
                )
                    == 422
            )
            #expect(
                try await put(
                    KeyProofRequest(challenge: Base64URL([1, 2]), signature: sign(account.id, [1, 2], by: signing))
                )
                    == 422
            )
            #expect(try await !proven())

            try await sdk.proveKeys(accountID: account.id, signing: signing, encryptionKey: encryption.publicKey)
            #expect(try await proven())
            // Audited once, and only the proof that was kept.
            let proofs = { try await sdk.audit().events.filter { $0.kind == "device-key-proof" } }
            #expect(try await proofs().map(\.outcome) == ["success"])
            let kept = try await reader.sdk.directory(username: "olga").history.first?.keyProof
            // A second proof changes nothing.
            try await sdk.proveKeys(accountID: account.id, signing: signing, encryptionKey: encryption.publicKey)
            #expect(try await reader.sdk.directory(username: "olga").history.first?.keyProof == kept)
            #expect(try await proofs().count == 1)
        }
    }
}
