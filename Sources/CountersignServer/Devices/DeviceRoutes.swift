import CountersignAPI
import CountersignCrypto
import Foundation
import Hummingbird

/// Devices, device sessions and the key directory under /v1 (docs/openapi.yaml).
struct DeviceRoutes {
    let accounts: AccountService
    let devices: DeviceService
    let sessions: SessionService
    let maxBody: Int

    static func vouch(_ v: KeyVouch) -> DeviceVouch {
        DeviceVouch(deviceId: v.deviceID, vouchedAt: v.vouchedAt, signature: Base64URL(v.signature))
    }

    /// A key's proof as the directory shows it (docs/PROTOCOL.md §1.3): a registration with its challenge and
    /// account, or a rotation with the key it replaced (the device's key listed just before it).
    static func keyProof(
        _ key: KeyHistoryRecord,
        accountID: String,
        before: ArraySlice<KeyHistoryRecord>
    ) -> KeyProof? {
        guard let proof = key.proof else { return nil }
        if let challenge = proof.challenge {
            return KeyProof(
                statement: KeyProof.registration,
                challenge: Base64URL(challenge),
                accountId: accountID,
                signature: Base64URL(proof.signature)
            )
        }
        guard let previous = before.last(where: { $0.deviceID == key.deviceID }) else { return nil }
        return KeyProof(
            statement: KeyProof.rotation,
            previousSigningKey: Base64URL(previous.signingKey),
            signature: Base64URL(proof.signature)
        )
    }

    static func endorsement(_ v: KeyVouch) -> ApproverEndorsement {
        ApproverEndorsement(deviceId: v.deviceID, endorsedAt: v.vouchedAt, signature: Base64URL(v.signature))
    }

    static func device(_ d: DeviceRecord, vouch: KeyVouch? = nil, endorsement: KeyVouch? = nil) -> Device {
        Device(
            id: d.id,
            name: d.name,
            kind: d.kind == DeviceRecord.authenticator ? .authenticator : .messaging,
            signingKey: Base64URL(d.signingKey),
            signingKeyId: d.signingKeyID,
            encryptionKey: Base64URL(d.encryptionKey),
            encryptionKeyId: d.encryptionKeyID,
            createdAt: d.createdAt,
            keysSince: d.keysSince,
            lastSeenAt: d.lastSeenAt,
            revokedAt: d.revokedAt,
            vouch: vouch.map(Self.vouch),
            endorsement: endorsement.map(Self.endorsement)
        )
    }

    func register(on router: Router<AppContext>) {
        let v1 = router.group("v1")
        let withAccount = v1.group().add(middleware: AccountSessionMiddleware(sessions: sessions))
        let withDevice = v1.group().add(middleware: DeviceSessionMiddleware(sessions: sessions))
        let withMessagingDevice = v1.group().add(
            middleware: DeviceSessionMiddleware(sessions: sessions, messagingOnly: true)
        )
        let withEither = v1.group().add(middleware: DeviceSessionMiddleware(sessions: sessions, orAccount: true))
        withAccount.delete("sessions") { request, context in
            try await accounts.signOutEverywhere(try context.account(), origin: APIRoutes.origin(request, context))
            return Response(status: .noContent)
        }
        withAccount.post("devices/challenges") { request, context in
            try json(try await devices.registrationChallenge(try context.account()), status: .created)
        }
        withAccount.post("devices") { request, context in
            let auth = try context.account()
            let body = try await APIRoutes.decode(DeviceRegistrationRequest.self, request, maxBody: maxBody)
            let device = try await devices.register(auth, body, origin: APIRoutes.origin(request, context))
            return try json(Self.device(device), status: .created, headers: [.location: "/v1/devices/\(device.id)"])
        }
        withAccount.get("devices") { request, context in
            let auth = try context.account()
            let vouches = try await devices.vouches(accountID: auth.account.id)
            let endorsed = Dictionary(
                try await devices.approvers(account: auth.account).map { ($0.0.id, $0.1) },
                uniquingKeysWith: { first, _ in first }
            )
            return try json(
                DeviceList(
                    devices: try await devices.list(auth).map {
                        Self.device($0, vouch: vouches[$0.id], endorsement: endorsed[$0.id])
                    }
                )
            )
        }
        withAccount.patch("devices/:id") { request, context in
            let auth = try context.account()
            let body = try await APIRoutes.decode(DeviceRenameRequest.self, request, maxBody: maxBody)
            let id = try context.parameters.require("id")
            return try json(
                Self.device(
                    try await devices.rename(
                        auth,
                        deviceID: id,
                        name: body.name,
                        origin: APIRoutes.origin(request, context)
                    )
                )
            )
        }
        withAccount.delete("devices/:id") { request, context in
            let auth = try context.account()
            try await devices.revoke(
                auth,
                deviceID: try context.parameters.require("id"),
                origin: APIRoutes.origin(request, context)
            )
            return Response(status: .noContent)
        }
        withAccount.put("devices/:id/revocation-token") { request, context in
            let auth = try context.account()
            let body = try await APIRoutes.decode(DeviceRevocationTokenSetting.self, request, maxBody: maxBody)
            try await devices.setRevocationToken(
                auth,
                deviceID: try context.parameters.require("id"),
                body,
                origin: APIRoutes.origin(request, context)
            )
            return Response(status: .noContent)
        }
        v1.post("devices/:id/self-revocation") { request, context in
            let body = try await APIRoutes.decode(DeviceRevocationToken.self, request, maxBody: maxBody)
            try await devices.revokeByToken(
                deviceID: try context.parameters.require("id"),
                token: body.token,
                origin: APIRoutes.origin(request, context)
            )
            return Response(status: .noContent)
        }
        withAccount.post("me/key-gate/events") { request, context in
            let auth = try context.account()
            let body = try await APIRoutes.decode(KeyGateEvent.self, request, maxBody: maxBody)
            try await devices.recordGateEvent(auth, body, origin: APIRoutes.origin(request, context))
            return Response(status: .noContent)
        }
        v1.post("device-sessions/challenges") { request, context in
            let body = try await APIRoutes.decode(DeviceSessionChallengeRequest.self, request, maxBody: maxBody)
            return try json(
                try await devices.sessionChallenge(deviceID: body.deviceId, origin: APIRoutes.origin(request, context)),
                status: .created
            )
        }
        v1.post("device-sessions") { request, context in
            let body = try await APIRoutes.decode(DeviceSessionRequest.self, request, maxBody: maxBody)
            let (token, session, device, account) = try await devices.openSession(
                body,
                origin: APIRoutes.origin(request, context)
            )
            return try json(
                DeviceSession(
                    token: token,
                    expiresAt: session.expiresAt,
                    device: Self.device(device),
                    username: account.username
                ),
                status: .created
            )
        }
        withDevice.delete("device-sessions/current") { request, context in
            let auth = try context.device()
            try await sessions.signOut(auth)
            return Response(status: .noContent)
        }
        withMessagingDevice.post("devices/current/keys") { request, context in
            // A messaging device's keys: an authenticator's are refused (403) by the middleware, before
            // the body is read.
            let auth = try context.device()
            let body = try await APIRoutes.decode(KeyRotationRequest.self, request, maxBody: maxBody)
            return try json(
                Self.device(try await devices.rotate(auth, body, origin: APIRoutes.origin(request, context)))
            )
        }
        withMessagingDevice.put("devices/current/key-proof") { request, context in
            let auth = try context.device()
            let body = try await APIRoutes.decode(KeyProofRequest.self, request, maxBody: maxBody)
            try await devices.proveKeys(auth, body, origin: APIRoutes.origin(request, context))
            return Response(status: .noContent)
        }
        withMessagingDevice.post("devices/:id/endorsement") { request, context in
            let auth = try context.device()
            let body = try await APIRoutes.decode(ApproverEndorsementRequest.self, request, maxBody: maxBody)
            let (device, endorsement) = try await devices.endorse(
                auth,
                deviceID: try context.parameters.require("id"),
                body,
                origin: APIRoutes.origin(request, context)
            )
            return try json(Self.device(device, endorsement: endorsement))
        }
        // A messaging device, or an authenticator endorsed as an approver (the service checks which).
        withDevice.post("devices/:id/vouch") { request, context in
            let auth = try context.device()
            let body = try await APIRoutes.decode(DeviceVouchRequest.self, request, maxBody: maxBody)
            let (device, vouch) = try await devices.vouch(
                auth,
                deviceID: try context.parameters.require("id"),
                body,
                origin: APIRoutes.origin(request, context)
            )
            return try json(Self.device(device, vouch: vouch))
        }
        withEither.get("users/:username/devices") { request, context in
            // Any signed-in account or device may read the directory (its middleware); anonymous callers
            // may not list users.
            let (account, active, history) = try await devices.directory(
                username: try context.parameters.require("username")
            )
            let approvers = try await devices.approvers(account: account)
            return try json(
                UserDirectory(
                    username: account.username,
                    devices: active.map {
                        DirectoryDevice(
                            id: $0.id,
                            name: $0.name,
                            signingKey: Base64URL($0.signingKey),
                            signingKeyId: $0.signingKeyID,
                            encryptionKey: Base64URL($0.encryptionKey),
                            encryptionKeyId: $0.encryptionKeyID,
                            createdAt: $0.createdAt,
                            keysSince: $0.keysSince
                        )
                    },
                    history: history.enumerated().map { i, key in
                        KeyHistoryEntry(
                            deviceId: key.deviceID,
                            signingKeyId: key.signingKeyID,
                            encryptionKeyId: key.encryptionKeyID,
                            signingKey: Base64URL(key.signingKey),
                            addedAt: key.addedAt,
                            retiredAt: key.retiredAt,
                            retiredBecause: key.retiredBecause,
                            encryptionKey: key.encryptionKey.map(Base64URL.init),
                            rotationSignature: key.rotationSignature.map(Base64URL.init),
                            vouch: key.vouch.map(Self.vouch),
                            keyProof: Self.keyProof(key, accountID: account.id, before: history[..<i])
                        )
                    },
                    approvers: approvers.map { device, endorsement in
                        DirectoryApprover(
                            id: device.id,
                            name: device.name,
                            signingKey: Base64URL(device.signingKey),
                            signingKeyId: device.signingKeyID,
                            createdAt: device.createdAt,
                            endorsement: Self.endorsement(endorsement)
                        )
                    }
                )
            )
        }
    }
}
