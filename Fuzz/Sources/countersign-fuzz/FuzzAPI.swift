import CountersignAPI
import Foundation

/// The JSON bodies of the API (CountersignAPI): every wire type, as the server decodes requests and the
/// SDK decodes answers and push frames.
enum FuzzAPI {
    /// The first byte picks the type (modulo the count; Fuzz/seeds.py reads this list for its seeds), the
    /// rest is the body. What decodes encodes, decodes again and encodes to the same JSON (APICoding sorts
    /// keys, so equal values give equal bytes).
    static let types: [@Sendable (Data) -> Void] = [
        check(RegisterRequest.self),
        check(SignInRequest.self),
        check(PasswordChangeRequest.self),
        check(ReauthRequest.self),
        check(AccountSettings.self),
        check(Account.self),
        check(SignedInSession.self),
        check(AuditEvent.self),
        check(AuditPage.self),
        check(CaptchaChallenge.self),
        check(DeviceChallenge.self),
        check(DeviceRegistrationRequest.self),
        check(Device.self),
        check(DeviceList.self),
        check(DeviceRenameRequest.self),
        check(DeviceSessionChallengeRequest.self),
        check(DeviceSessionRequest.self),
        check(DeviceSession.self),
        check(KeyRotationRequest.self),
        check(DirectoryDevice.self),
        check(KeyHistoryEntry.self),
        check(UserDirectory.self),
        check(DeviceKeyRef.self),
        check(DeviceRevocationToken.self),
        check(KeyGateEvent.self),
        check(MFARequired.self),
        check(MFATransactionView.self),
        check(NumberMatchingView.self),
        check(MFACodeRequest.self),
        check(AuthenticatorInfo.self),
        check(MFAStatus.self),
        check(PairingKeyResponse.self),
        check(TOTPEnrollment.self),
        check(RecoveryCodeList.self),
        check(MFASettings.self),
        check(PairingRequest.self),
        check(PairingInfo.self),
        check(ChallengeKeySet.self),
        check(SealedTOTP.self),
        check(PushChallenge.self),
        check(PushChallengeList.self),
        check(PushAnswer.self),
        check(PushAnswerResult.self),
        check(PushPermission.self),
        check(LogUpload.self),
        check(LogReceipt.self),
        check(AuthCodeRequest.self),
        check(AuthCodeCreated.self),
        check(AuthCodeState.self),
        check(AuthCodeClaim.self),
        check(AuthenticationObject.self),
        check(ClientContext.self),
        check(ChallengeClaims.self),
        check(ClientContextClaim.self),
        check(AnswerClaims.self),
        check(SendMessageRequest.self),
        check(SentMessage.self),
        check(QueuedMessage.self),
        check(MessagePage.self),
        check(AckRequest.self),
        check(AckResult.self),
        check(MessageStatus.self),
        check(PasskeyCredentialDescriptor.self),
        check(PasskeyCreationOptions.self),
        check(PasskeyRegistrationStart.self),
        check(PasskeyRegistrationResponse.self),
        check(PasskeyRegistrationFinish.self),
        check(PasskeySummary.self),
        check(PasskeyRequestOptions.self),
        check(PasskeyAssertionStart.self),
        check(PasskeyAssertionResponse.self),
        check(PasskeyAssertionFinish.self),
        check(PasskeyRename.self),
        check(PasskeyList.self),
        check(PasskeyPRFInputs.self),
        check(ProblemCode.self),
        check(ProblemDetails.self),
        check(PushTicket.self),
        check(PushFrame.self),
        check(Base64URL.self),
    ]

    static func json(_ data: [UInt8]) {
        guard let selector = data.first else { return }
        types[Int(selector) % types.count](Data(data.dropFirst()))
    }

    /// Push frames as the server reads them from a device's WebSocket and the SDK from the server.
    static func pushFrame(_ data: [UInt8]) {
        roundtrip(PushFrame.self, Data(data))
        guard let frame = try? APICoding.decoder().decode(PushFrame.self, from: Data(data)),
            let encoded = try? APICoding.encoder().encode(frame)
        else { return }
        guard (try? APICoding.decoder().decode(PushFrame.self, from: encoded)) == frame else {
            finding("a push frame decodes to another frame after encoding: \(String(decoding: encoded, as: UTF8.self))")
        }
    }

    /// The roundtrip of one type, as an entry of `types`.
    private static func check<T: Codable & Sendable>(_ type: T.Type) -> @Sendable (Data) -> Void {
        { roundtrip(T.self, $0) }
    }

    private static func roundtrip<T: Codable>(_ type: T.Type, _ body: Data) {
        guard let value = try? APICoding.decoder().decode(type, from: body) else { return }
        guard let encoded = try? APICoding.encoder().encode(value) else {
            finding("a decoded \(type) does not encode")
        }
        guard let again = try? APICoding.decoder().decode(type, from: encoded) else {
            finding("a \(type) does not decode from its own JSON: \(String(decoding: encoded, as: UTF8.self))")
        }
        guard (try? APICoding.encoder().encode(again)) == encoded else {
            finding("a \(type) encodes differently after a roundtrip: \(String(decoding: encoded, as: UTF8.self))")
        }
    }
}
