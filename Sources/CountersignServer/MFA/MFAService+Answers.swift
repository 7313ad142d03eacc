import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging

/// Authenticators answering: their pending challenges, approvals and denials, push permission, logs.
extension MFAService {

    public func challenges(_ auth: DeviceAuthenticated) async throws -> PushChallengeList {
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        return PushChallengeList(
            challenges: try await transactionStore.pendingChallenges(deviceID: auth.device.id, now: clock.now()).map(
                PushChallenge.init
            )
        )
    }

    func pendingChallenges(deviceID: String) async throws -> [String] {
        try await transactionStore.pendingChallenges(deviceID: deviceID, now: clock.now())
    }

    public func answer(
        _ auth: DeviceAuthenticated,
        _ answer: PushAnswer,
        origin: RequestOrigin
    ) async throws -> PushAnswerResult {
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        guard let claims = await ChallengeSigner.verifyAnswer(answer.jwt, signingKey: auth.device.signingKey) else {
            throw MFAError.badSignature(
                "the answer must be an ES256 JWT signed by this authenticator's signing key (docs/PROTOCOL.md §3)"
            )
        }
        let now = clock.now()
        guard claims.iss == auth.device.id, claims.aud == issuer, ["APPROVE", "DENY"].contains(claims.decision),
            let nonce = Base64URL(text: claims.nonce)
        else {
            throw RequestError.invalidField(
                field: "jwt",
                reason: "iss must be this device, aud the challenge's iss, decision APPROVE or DENY"
            )
        }
        // An answer is made for one challenge, within its minute: one made long before or after is stale.
        guard abs(Double(claims.iat) - now.timeIntervalSince1970) <= 300 else {
            throw RequestError.invalidField(field: "jwt", reason: "iat is more than 5 minutes from the server's clock")
        }
        // The transaction's binding is not the device's to know: it is looked up by id, and only this
        // account's transactions that challenged this very device (the nonce) accept the answer.
        let reload = { () async throws -> (Stored, Int64) in
            guard let row = try await self.transactionStore.transaction(id: claims.txn),
                row.accountID == auth.account.id
            else {
                throw MFAError.transactionNotFound
            }
            return (try JSONDecoder().decode(Stored.self, from: row.state), row.version)
        }
        let (s, outcome) = try await transition(id: claims.txn, reload: reload) { s in
            let o = s.tx.answer(
                device: auth.device.id,
                nonce: nonce.bytes,
                approve: claims.decision == "APPROVE",
                number: claims.number,
                report: claims.report ?? false,
                now: now
            )
            if case .completed = o { s.viaPush = true }
            if case .failed = o { s.viaPush = true }
            return o
        }
        if case .refused(let why) = outcome { throw MFAError.answerRefused(why.rawValue) }
        try await settle(s, outcome, origin: origin, method: .push)
        return PushAnswerResult(status: s.tx.status(at: now).rawValue)
    }

    public func setPush(_ auth: DeviceAuthenticated, allowed: Bool) async throws -> PushPermission {
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        try await authenticatorStore.setPushAllowed(deviceID: auth.device.id, allowed)
        try await audit.record(
            auth.account.id,
            .mfaPush,
            allowed ? .allowed : .disallowed,
            RequestOrigin(address: "", userAgent: "authenticator \(auth.device.id)")
        )
        return PushPermission(allowed: allowed)
    }

    /// Keeps the device's log text (the SDK redacts it first) under a new support id.
    public func uploadLogs(_ auth: DeviceAuthenticated, text: String) async throws -> LogReceipt {
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        guard text.utf8.count <= 256 * 1024 else {
            throw RequestError.invalidField(field: "text", reason: "at most 256 KiB")
        }
        if let wait = logUploads.take("device " + auth.device.id, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        let id = HumanCode.generate(length: 10, random: random)
        try await authenticatorStore.addLog(
            supportID: id,
            deviceID: auth.device.id,
            accountID: auth.account.id,
            at: clock.now(),
            text: text
        )
        return LogReceipt(supportId: HumanCode.grouped(id, by: 5))
    }
}
