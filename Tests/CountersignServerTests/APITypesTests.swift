import CountersignAPI
import CountersignTestSupport
import Foundation
import Testing

@testable import CountersignServer

/// The wire types of CountersignAPI and the schemas of openapi.yaml name the same fields, and agree on
/// which are required: a field added to one and not the other fails here.
@Suite(.closesStorage) struct APITypesTests {
    /// openapi.yaml as JSON, read by PyYAML (installed with openapi-spec-validator by scripts/test.sh).
    static func schemas() throws -> [String: [String: Any]] {
        let r = try Spawned.run(
            "/usr/bin/env",
            ["python3", "-c", "import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))"],
            stdin: Data(CountersignServer.openAPIDocument)
        )
        try #require(r.status == 0, "\(String(decoding: r.stderr, as: UTF8.self))")
        let doc = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let components = try #require(doc["components"] as? [String: Any])
        return try #require(components["schemas"] as? [String: [String: Any]])
    }

    static let date = Date(timeIntervalSince1970: 1_800_000_000)
    static let b = Base64URL([1, 2, 3])

    /// One value of each wire type, under the schema name that documents it.
    nonisolated(unsafe) static let samples: [(String, Any)] = [
        ("RegisterRequest", RegisterRequest(username: "u", password: "p", name: "n", lastname: "l")),
        ("SignInRequest", SignInRequest(username: "u", password: "p")),
        ("PasswordChangeRequest", PasswordChangeRequest(currentPassword: "a", newPassword: "b")),
        ("ReauthRequest", ReauthRequest(password: "p")),
        ("Settings", AccountSettings(reauthIntervalMinutes: 0)),
        (
            "Account",
            Account(
                id: "i",
                username: "u",
                name: "n",
                lastname: "l",
                settings: .init(reauthIntervalMinutes: 0),
                createdAt: date
            )
        ),
        (
            "Session",
            SignedInSession(
                token: "t",
                expiresAt: date,
                account: Account(
                    id: "i",
                    username: "u",
                    name: "n",
                    lastname: "l",
                    settings: .init(reauthIntervalMinutes: 0),
                    createdAt: date
                )
            )
        ),
        ("AuditEvent", AuditEvent(id: 1, at: date, kind: "k", outcome: "o", address: "a", userAgent: "u")),
        ("AuditPage", AuditPage(events: [], next: nil)),
        ("Challenge", CaptchaChallenge(algorithm: "SHA-256", challenge: "c", maxnumber: 1, salt: "s", signature: "g")),
        ("DeviceChallenge", DeviceChallenge(challenge: b, expiresAt: date)),
        (
            "DeviceRegistrationRequest",
            DeviceRegistrationRequest(name: "n", signingKey: b, encryptionKey: b, challenge: b, signature: b)
        ),
        (
            "Device",
            Device(
                id: "i",
                name: "n",
                kind: .authenticator,
                signingKey: b,
                signingKeyId: "k",
                encryptionKey: b,
                encryptionKeyId: "k",
                createdAt: date,
                keysSince: date,
                lastSeenAt: nil,
                revokedAt: nil
            )
        ),
        ("DeviceList", DeviceList(devices: [])),
        ("DeviceRenameRequest", DeviceRenameRequest(name: "n")),
        ("DeviceSessionChallengeRequest", DeviceSessionChallengeRequest(deviceId: "d")),
        ("DeviceSessionRequest", DeviceSessionRequest(deviceId: "d", nonce: b, signature: b)),
        (
            "KeyRotationRequest",
            KeyRotationRequest(signingKey: b, encryptionKey: b, oldKeySignature: b, newKeySignature: b)
        ),
        (
            "DirectoryDevice",
            DirectoryDevice(
                id: "i",
                name: "n",
                signingKey: b,
                signingKeyId: "k",
                encryptionKey: b,
                encryptionKeyId: "k",
                createdAt: date,
                keysSince: date
            )
        ),
        (
            "KeyHistoryEntry",
            KeyHistoryEntry(
                deviceId: "d",
                signingKeyId: "k",
                encryptionKeyId: "k",
                signingKey: b,
                addedAt: date,
                retiredAt: nil,
                retiredBecause: nil
            )
        ),
        ("KeyProof", KeyProof(statement: KeyProof.registration, signature: b)),
        ("KeyProofRequest", KeyProofRequest(challenge: b, signature: b)),
        ("SessionBinding", SessionBinding(id: "i", deviceId: nil, idleSeconds: 1)),
        ("UserDirectory", UserDirectory(username: "u", devices: [], history: [])),
        ("DeviceKeyRef", DeviceKeyRef(username: nil, deviceId: nil, encryptionKeyId: "k")),
        ("SendMessageRequest", SendMessageRequest(to: ["u"], envelope: b)),
        ("SentMessage", SentMessage(id: "i", acceptedAt: date, deliverAt: date, recipientDevices: 1)),
        (
            "QueuedMessage",
            QueuedMessage(
                seq: 1,
                id: "i",
                direction: "incoming",
                from: "f",
                fromDevice: "d",
                to: [],
                envelope: b,
                acceptedAt: date,
                deliverAt: date
            )
        ),
        ("MessagePage", MessagePage(messages: [], next: nil)),
        ("AckRequest", AckRequest(seqs: [])),
        ("AckResult", AckResult(acknowledged: 0)),
        ("PushTicket", PushTicket(ticket: "t", expiresAt: date)),
        (
            "MessageStatus",
            MessageStatus(
                id: "i",
                to: [],
                acceptedAt: date,
                deliverAt: date,
                recipientDevices: 0,
                fetchedBy: 0,
                acknowledgedBy: 0,
                cancelled: false
            )
        ),
        // Multi-factor sign-in
        ("MFARequired", MFARequired(transaction: transaction, binding: "csb_b")),
        ("MFATransactionView", transaction),
        ("NumberMatchingView", NumberMatchingView(type: "ENTER_MANUALLY", number: "42")),
        ("MFACodeRequest", MFACodeRequest(code: "123456")),
        ("AuthenticatorInfo", AuthenticatorInfo(deviceId: "d", name: "n", pairedAt: date, pushAllowed: true)),
        (
            "MFAStatus",
            MFAStatus(
                enabled: true,
                authenticators: [],
                totpApp: false,
                recoveryCodesLeft: 10,
                pushSuspended: false,
                numberMatching: "ENTER_MANUALLY",
                numberDigits: 2
            )
        ),
        ("PairingKeyResponse", PairingKeyResponse(key: "k", uri: "u", expiresAt: date)),
        ("TOTPEnrollment", TOTPEnrollment(secret: "s", uri: "u")),
        ("RecoveryCodeList", RecoveryCodeList(codes: [])),
        ("MFASettings", MFASettings(numberMatching: "SELECT_NUMBER", numberDigits: 6)),
        ("PairingRequest", PairingRequest(pairingKey: "k", name: "n", signingKey: b, encryptionKey: b, signature: b)),
        (
            "PairingInfo",
            PairingInfo(
                authenticators: [],
                deviceId: "d",
                username: "u",
                session: DeviceSession(token: "t", expiresAt: date, device: device, username: "u"),
                jwks: ChallengeKeySet(keys: []),
                totp: SealedTOTP(envelope: b)
            )
        ),
        ("PairingAuthenticator", PairingInfo.Authenticator(type: "push", status: "COMPLETED")),
        ("ChallengeKeySet", ChallengeKeySet(keys: [])),
        ("ChallengeKey", ChallengeKeySet.Key(x: "x", y: "y", kid: "k")),
        ("SealedTOTP", SealedTOTP(envelope: b)),
        ("PushChallenge", PushChallenge(jwt: "j")),
        ("PushChallengeList", PushChallengeList(challenges: [])),
        (
            "ChallengeClaims",
            ChallengeClaims(
                iss: "i",
                aud: "a",
                sub: "s",
                txn: "t",
                nonce: "n",
                iat: 1,
                exp: 2,
                ctx: ClientContextClaim(address: "a", userAgent: "u", time: 1),
                nm: .init(type: "ENTER_MANUALLY", options: nil)
            )
        ),
        ("ChallengeMatching", ChallengeClaims.Matching(type: "SELECT_NUMBER", options: ["1", "2", "3"])),
        ("ClientContextClaim", ClientContextClaim(address: "a", userAgent: "u", time: 1)),
        (
            "AnswerClaims",
            AnswerClaims(iss: "i", aud: "a", txn: "t", nonce: "n", iat: 1, decision: "DENY", number: nil, report: true)
        ),
        ("PushAnswer", PushAnswer(jwt: "j")),
        ("PushAnswerResult", PushAnswerResult(status: "COMPLETED")),
        ("PushPermission", PushPermission(allowed: true)),
        ("LogUpload", LogUpload(text: "t")),
        ("LogReceipt", LogReceipt(supportId: "s")),
        ("AuthCodeRequest", AuthCodeRequest(userApproval: nil)),
        ("AuthCodeCreated", AuthCodeCreated(code: "c", uri: "u", expiresAt: date, binding: "csb_b")),
        ("AuthCodeState", AuthCodeState(status: "PENDING", expiresAt: date)),
        ("AuthCodeClaim", AuthCodeClaim(code: "c", userId: nil)),
        (
            "AuthenticationObject",
            AuthenticationObject(
                status: "CLAIMED",
                users: [],
                userApproval: "REQUIRED",
                clientContext: ClientContext(address: "a", userAgent: "u", time: date)
            )
        ),
        ("AuthenticationUser", AuthenticationObject.User(userId: "i", username: "u", given: "g", family: "f")),
        ("ClientContext", ClientContext(address: "a", userAgent: "u", time: date)),
    ]
    static let transaction = MFATransactionView(
        id: "i",
        status: "PUSH_CONFIRMATION_REQUIRED",
        methods: ["push"],
        expiresAt: date,
        numberMatching: nil,
        failure: nil,
        attemptsLeft: nil
    )
    static let device = Device(
        id: "i",
        name: "n",
        kind: .messaging,
        signingKey: b,
        signingKeyId: "k",
        encryptionKey: b,
        encryptionKeyId: "k",
        createdAt: date,
        keysSince: date,
        lastSeenAt: nil,
        revokedAt: nil
    )

    @Test func everyWireTypeMatchesItsSchema() throws {
        let schemas = try Self.schemas()
        for (name, value) in Self.samples {
            guard let schema = schemas[name], let properties = schema["properties"] as? [String: Any] else {
                Issue.record("openapi.yaml has no schema \(name)")
                continue
            }
            let fields = Mirror(reflecting: value).children.compactMap { child -> (String, Bool)? in
                guard let label = child.label else { return nil }
                return (label, Mirror(reflecting: child.value).displayStyle != .optional)
            }
            #expect(Set(fields.map(\.0)) == Set(properties.keys), "\(name): fields differ from the schema's properties")
            let required = Set((schema["required"] as? [String]) ?? [])
            #expect(Set(fields.filter(\.1).map(\.0)) == required, "\(name): required fields differ")
        }
        // ProblemDetails: its fields are the Problem schema's properties.
        let problem = try #require(schemas["Problem"]?["properties"] as? [String: Any])
        let problemFields = [
            "type", "code", "title", "status", "detail", "field", "retryAt", "locked", "oneMoreLocks", "contact",
            "intervalMinutes",
            "missingDevices", "extraDevices",
            "pingOneError", "reason",
        ]
        #expect(Set(problemFields) == Set(problem.keys))
    }

    /// Unpadded base64url, canonical only: the same bytes as Foundation's base64 for every length, and
    /// padding, the standard alphabet, stray characters and non-zero spare bits refused.
    @Test func base64URLIsCanonicalAndAgreesWithFoundation() {
        var rng = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let text = Base64URL(bytes).text
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(text == foundation, "length \(length)")
            #expect(Base64URL(text: text)?.bytes == bytes, "length \(length)")
        }
        for bad in ["A", "AB", "AAB", "AA==", "AA=", "+A", "/A", "AA A", "AÀ", "AAAAA"] {
            #expect(Base64URL(text: bad) == nil, "\(bad)")
        }
        #expect(
            Base64URL(text: "AA")?.bytes == [0] && Base64URL(text: "AAE")?.bytes == [0, 1]
                && Base64URL(text: "")?.bytes == []
        )
    }
}
