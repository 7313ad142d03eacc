import Foundation

/// `PUT /v1/sessions/current/binding` (docs/PROTOCOL.md §1.1): binds a key this browser holds to its
/// account session, so that a reload, a new tab or a restart can resume the session with the key's
/// signature instead of a password. `deviceId`: the key is that messaging device's current signing key
/// (the binding then lasts as long as the device, and the key gate guards it).
public struct SessionBindingRequest: Codable, Sendable {
    public var publicKey: Base64URL
    public var deviceId: String?
    /// `bindingMessage(account_id, public_key)` signed by the key.
    public var signature: Base64URL
    public init(publicKey: Base64URL, deviceId: String? = nil, signature: Base64URL) {
        self.publicKey = publicKey
        self.deviceId = deviceId
        self.signature = signature
    }
}

/// A session binding: what the browser keeps (its ID, never a token) to resume the session.
public struct SessionBinding: Codable, Equatable, Sendable {
    public var id: String
    public var deviceId: String?
    /// How long the binding may go unused before it ends (the server's setting for its kind).
    public var idleSeconds: Int
    /// A nonce the next resumption may sign without asking for one (docs/PROTOCOL.md §1.1).
    public var nextNonce: DeviceChallenge?
    public init(id: String, deviceId: String?, idleSeconds: Int, nextNonce: DeviceChallenge? = nil) {
        self.id = id
        self.deviceId = deviceId
        self.idleSeconds = idleSeconds
        self.nextNonce = nextNonce
    }
}

/// `POST /v1/session-resumptions/challenges`.
public struct SessionResumptionChallengeRequest: Codable, Sendable {
    public var bindingId: String
    public init(bindingId: String) { self.bindingId = bindingId }
}

/// `POST /v1/session-resumptions`: the nonce signed by the bound key.
public struct SessionResumptionRequest: Codable, Sendable {
    public var bindingId: String
    public var nonce: Base64URL
    public var signature: Base64URL
    public init(bindingId: String, nonce: Base64URL, signature: Base64URL) {
        self.bindingId = bindingId
        self.nonce = nonce
        self.signature = signature
    }
}
