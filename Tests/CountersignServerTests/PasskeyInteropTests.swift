import CountersignAPI
import CountersignCrypto
import CountersignTestSupport
import Foundation
import HTTPTypes
import Testing

@testable import CountersignServer

/// Issue 22's independent checks, at the level of the rules: registrations and assertions built by
/// python-fido2's CBOR and COSE encoders (Tests/interop/webauthn_peer.py) pass PasskeyRules, and
/// py_webauthn 3.x agrees with the rules on each of them and on each bent copy; the Swift test
/// authenticator's output passes py_webauthn too, so the rules' own tests use standard bytes.
@Suite(.closesStorage) struct PasskeyInteropTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("interop/webauthn_peer.py").path
    let rp = RelyingParty(publicURL: URL(string: "https://cs.example")!)
    let origin = "https://cs.example"
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let handle = Array(repeating: UInt8(3), count: 16)

    static func peer(_ request: [String: Any]) throws -> [String: Any] {
        let r = try Spawned.run(
            "/usr/bin/env",
            ["python3", script],
            stdin: try JSONSerialization.data(withJSONObject: request)
        )
        try #require(r.status == 0, "\(String(decoding: r.stderr, as: UTF8.self))")
        return try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
    }

    static func bytes(_ any: Any?) throws -> [UInt8] {
        let text = try #require(any as? String)
        return try #require(Base64URL(text: text)).bytes
    }

    func ceremony(_ kind: PasskeyCeremony.Kind, account: String? = "acct") -> PasskeyCeremony {
        PasskeyCeremony.make(kind: kind, accountID: account, boundTo: nil, now: now, random: SystemRandomSource())
    }

    /// The rules' verdict and py_webauthn's on one registration response.
    func registration(
        _ response: [String: Any],
        _ c: PasskeyCeremony
    ) throws -> (swift: StoredPasskey?, python: [String: Any]) {
        let inner = try #require(response["response"] as? [String: Any])
        var swift: StoredPasskey?
        if let v = try? PasskeyRules.verifyRegistration(
            .init(
                rawID: try Self.bytes(response["rawId"]),
                clientDataJSON: try Self.bytes(inner["clientDataJSON"]),
                attestationObject: (try? Self.bytes(inner["attestationObject"])) ?? [],
                transports: inner["transports"] as? [String] ?? []
            ),
            ceremony: c,
            accountID: "acct",
            boundTo: nil,
            existingCount: 0,
            rp: rp,
            now: now
        ) {
            swift = v.stored(id: "p", accountID: "acct", name: "", prfSalt: [], at: now)
        }
        var credential = response
        credential["publicKey"] = nil
        let python = try Self.peer([
            "op": "verify-registration", "credential": credential, "challenge": Base64URL(c.challenge).text,
            "rpId": rp.id, "origin": origin,
        ])
        return (swift, python)
    }

    func assertion(
        _ response: [String: Any],
        _ c: PasskeyCeremony,
        stored: StoredPasskey
    ) throws -> (swift: Bool, python: Bool) {
        let inner = try #require(response["response"] as? [String: Any])
        let swift =
            (try? PasskeyRules.verifyAssertion(
                .init(
                    rawID: try Self.bytes(response["rawId"]),
                    clientDataJSON: try Self.bytes(inner["clientDataJSON"]),
                    authenticatorData: try Self.bytes(inner["authenticatorData"]),
                    signature: try Self.bytes(inner["signature"]),
                    userHandle: try? Self.bytes(inner["userHandle"])
                ),
                ceremony: c,
                kind: c.kind,
                boundTo: nil,
                stored: stored,
                userHandle: handle,
                rp: rp,
                now: now
            )) != nil
        let python = try Self.peer([
            "op": "verify-authentication", "credential": response, "challenge": Base64URL(c.challenge).text,
            "rpId": rp.id, "origin": origin, "publicKey": Base64URL(stored.publicKey).text,
            "signCount": Int(stored.signCount),
        ])
        return (swift, python["ok"] as? Bool == true)
    }

    @Test(arguments: [false, true])
    func fido2RegistrationsAndAssertionsPassBothAndBentOnesNeither(packed: Bool) throws {
        let credentialID = Base64URL((0..<32).map { _ in UInt8.random(in: 0...255) }).text
        let seed = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let reg = ceremony(.registration)
        func makeRegistration(_ overrides: [String: Any] = [:]) throws -> [String: Any] {
            try Self.peer(
                [
                    "op": "register", "rpId": rp.id, "origin": origin, "challenge": Base64URL(reg.challenge).text,
                    "flags": 0x05,
                    "seed": seed, "credentialId": credentialID, "packed": packed,
                ].merging(overrides) { $1 }
            )
        }
        let good = try registration(try makeRegistration(), reg)
        let stored = try #require(good.swift, "the rules refused fido2's registration")
        #expect(good.python["ok"] as? Bool == true, "\(good.python)")
        #expect(Base64URL(stored.publicKey).text == good.python["publicKey"] as? String, "the same COSE key")
        #expect(Base64URL(stored.credentialID).text == credentialID)

        for (name, overrides) in [
            ("wrong origin", ["origin": "https://evil.example"]), ("wrong rp id", ["rpId": "evil.example"]),
            ("no user verification", ["flags": 0x01]),
            ("another challenge", ["challenge": Base64URL(ceremony(.registration).challenge).text]),
            ("an assertion's type", ["type": "webauthn.get"]), ("no user presence", ["flags": 0x04]),
        ] as [(String, [String: Any])] {
            let bent = try registration(try makeRegistration(overrides), reg)
            #expect(bent.swift == nil, "\(name): the rules accepted it")
            #expect(bent.python["ok"] as? Bool == false, "\(name): py_webauthn accepted it")
        }
        if packed {
            let bent = try registration(try makeRegistration(["packedOver": "other"]), reg)
            #expect(bent.swift == nil && bent.python["ok"] as? Bool == false, "a bad self-attestation signature")
        }
        // py_webauthn 3.0 reads crossOrigin but does not refuse it; an embedded frame is not a sign-in here.
        #expect(try registration(try makeRegistration(["crossOrigin": true]), reg).swift == nil, "crossOrigin")
        // Malformed CBOR: the attestation object cut short.
        var cut = try makeRegistration()
        var inner = try #require(cut["response"] as? [String: Any])
        let object = try Self.bytes(inner["attestationObject"])
        inner["attestationObject"] = Base64URL(Array(object.dropLast(3))).text
        cut["response"] = inner
        let malformed = try registration(cut, reg)
        #expect(malformed.swift == nil && malformed.python["ok"] as? Bool == false)

        let signIn = ceremony(.signIn, account: nil)
        func makeAssertion(_ overrides: [String: Any] = [:]) throws -> [String: Any] {
            try Self.peer(
                [
                    "op": "assert", "rpId": rp.id, "origin": origin, "challenge": Base64URL(signIn.challenge).text,
                    "flags": 0x05,
                    "signCount": 1, "seed": seed, "credentialId": credentialID, "userHandle": Base64URL(handle).text,
                ].merging(overrides) { $1 }
            )
        }
        let ok = try assertion(try makeAssertion(), signIn, stored: stored)
        #expect(ok.swift && ok.python, "fido2's assertion: rules \(ok.swift), py_webauthn \(ok.python)")
        for (name, overrides) in [
            ("wrong origin", ["origin": "https://evil.example"]), ("wrong rp id", ["rpId": "evil.example"]),
            ("no user verification", ["flags": 0x01]),
            ("replayed challenge", ["challenge": Base64URL(reg.challenge).text]),
            ("a registration's type", ["type": "webauthn.create"]), ("no user presence", ["flags": 0x04]),
        ] as [(String, [String: Any])] {
            let bent = try assertion(try makeAssertion(overrides), signIn, stored: stored)
            #expect(!bent.swift && !bent.python, "\(name): rules \(bent.swift), py_webauthn \(bent.python)")
        }
        #expect(try !assertion(try makeAssertion(["crossOrigin": true]), signIn, stored: stored).swift, "crossOrigin")
        // A flipped bit in the signature.
        var flipped = try makeAssertion()
        var response = try #require(flipped["response"] as? [String: Any])
        var signature = try Self.bytes(response["signature"])
        signature[signature.count - 2] ^= 0x01
        response["signature"] = Base64URL(signature).text
        flipped["response"] = response
        let bad = try assertion(flipped, signIn, stored: stored)
        #expect(!bad.swift && !bad.python, "flipped signature: rules \(bad.swift), py_webauthn \(bad.python)")
    }

    /// python-fido2's bytes through the server itself, on both backends: a registration is stored, an assertion
    /// signs in once and its replay is refused (the store spends a ceremony once; the rules cannot show that);
    /// attestation objects bent into CBOR the decoder refuses (an indefinite-length map, a tag, a key twice)
    /// are refused over HTTP and store nothing.
    @Test(arguments: Backend.available)
    func fido2ResponsesThroughTheServer(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("pkpy")
            let token = try await api.token("pkpy")
            let credentialID = Base64URL((0..<32).map { _ in UInt8.random(in: 0...255) }).text
            let seed = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            func register(_ bend: ([UInt8]) -> [UInt8] = { $0 }) async throws -> API.Reply {
                let options = try await api.call(.post, "/v1/me/passkeys/options", token: token)
                let publicKey = try #require(options.json["publicKey"] as? [String: Any])
                var response = try Self.peer([
                    "op": "register", "rpId": "localhost", "origin": PasskeyAPITests.origin,
                    "challenge": try #require(publicKey["challenge"] as? String), "flags": 0x05, "seed": seed,
                    "credentialId": credentialID, "packed": true,
                ])
                var inner = try #require(response["response"] as? [String: Any])
                inner["attestationObject"] = Base64URL(bend(try Self.bytes(inner["attestationObject"]))).text
                response["response"] = inner
                let body: [String: Any] = [
                    "ceremonyId": try #require(options.json["ceremonyId"] as? String), "credential": response,
                    "name": "fido2",
                ]
                return try await api.call(
                    .post,
                    "/v1/me/passkeys",
                    raw: try JSONSerialization.data(withJSONObject: body),
                    token: token,
                    headers: [.contentType: "application/json"]
                )
            }
            // {fmt, attStmt, authData} as a definite map of 3 (0xA3): bent three ways the decoder must refuse.
            let fmtNone: [UInt8] = [0x63] + Array("fmt".utf8) + [0x64] + Array("none".utf8)
            for (name, bend) in [
                ("an indefinite-length map", { (o: [UInt8]) in [0xBF] + o.dropFirst() + [0xFF] }),
                ("a tag", { (o: [UInt8]) in [0xD8, 0x18] + o }),
                ("a key twice", { (o: [UInt8]) in [0xA4] + o.dropFirst() + fmtNone }),
            ] as [(String, ([UInt8]) -> [UInt8])] {
                let refused = try await register(bend)
                #expect((400..<500).contains(refused.status), "\(name): \(refused.status) \(refused.json)")
            }
            let listed = { try await api.call(.get, "/v1/me/passkeys", token: token).json["passkeys"] as? [Any] }
            #expect(try await listed()?.isEmpty == true, "nothing stored")
            let added = try await register()
            #expect(added.status == 201, "\(added.json)")

            let options = try await api.call(.post, "/v1/sessions/passkey/options")
            let publicKey = try #require(options.json["publicKey"] as? [String: Any])
            let assertion = try Self.peer([
                "op": "assert", "rpId": "localhost", "origin": PasskeyAPITests.origin,
                "challenge": try #require(publicKey["challenge"] as? String), "flags": 0x05, "signCount": 1,
                "seed": seed, "credentialId": credentialID,
                "userHandle": Base64URL(try await PasskeyAPITests.handle(h, "pkpy")).text,
            ])
            let body = try JSONSerialization.data(withJSONObject: [
                "ceremonyId": try #require(options.json["ceremonyId"] as? String), "credential": assertion,
            ])
            let json: HTTPFields = [.contentType: "application/json"]
            let signedIn = try await api.call(.post, "/v1/sessions/passkey", raw: body, headers: json)
            #expect(signedIn.status == 201 && signedIn.json["token"] is String, "\(signedIn.json)")
            let replayed = try await api.call(.post, "/v1/sessions/passkey", raw: body, headers: json)
            #expect(replayed.status == 409 && replayed.code == "passkey-ceremony-invalid", "\(replayed.json)")
        }
        await h.close()
    }

    @Test func theSwiftTestAuthenticatorsBytesPassPyWebauthn() throws {
        var auth = SoftAuthenticator()
        let reg = ceremony(.registration)
        let r = auth.register(rpID: rp.id, challenge: reg.challenge, origin: origin, packed: true)
        let response: [String: Any] = [
            "id": Base64URL(auth.credentialID).text, "rawId": Base64URL(auth.credentialID).text, "type": "public-key",
            "response": [
                "clientDataJSON": Base64URL(r.clientDataJSON).text,
                "attestationObject": Base64URL(r.attestationObject).text,
            ],
            "clientExtensionResults": [String: Any](),
        ]
        let verdict = try registration(response, reg)
        let stored = try #require(verdict.swift)
        #expect(verdict.python["ok"] as? Bool == true, "\(verdict.python)")
        let signIn = ceremony(.signIn, account: nil)
        let a = auth.assert(rpID: rp.id, challenge: signIn.challenge, origin: origin)
        let assertionResponse: [String: Any] = [
            "id": Base64URL(auth.credentialID).text, "rawId": Base64URL(auth.credentialID).text, "type": "public-key",
            "response": [
                "clientDataJSON": Base64URL(a.clientDataJSON).text,
                "authenticatorData": Base64URL(a.authenticatorData).text,
                "signature": Base64URL(a.signature).text, "userHandle": Base64URL(handle).text,
            ],
            "clientExtensionResults": [String: Any](),
        ]
        let ok = try assertion(assertionResponse, signIn, stored: stored)
        #expect(ok.swift && ok.python, "rules \(ok.swift), py_webauthn \(ok.python)")
    }
}
