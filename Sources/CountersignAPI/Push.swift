#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `POST /v1/devices/current/push-tickets`: the credential of a push connection's first frame
/// (docs/PROTOCOL.md §2). Single use, 60 seconds, bound to the device session that asked for it.
public struct PushTicket: Codable, Equatable, Sendable {
    public var ticket: String
    public var expiresAt: Date
    public init(ticket: String, expiresAt: Date) {
        self.ticket = ticket
        self.expiresAt = expiresAt
    }
}

/// One frame of the push channel, either way (docs/PROTOCOL.md §2). Decoding never fails on an unknown
/// `type`: it becomes `.unknown`, which receivers ignore, so new event types need no new version.
public enum PushFrame: Codable, Equatable, Sendable {
    /// Client → server, first frame.
    case hello(ticket: String)
    /// Server → client, after a good `hello`.
    case ready(deviceId: String, window: Int, pingInterval: Int)
    /// Server → client: one queue entry.
    case message(seq: Int64, message: QueuedMessage)
    /// Server → client: everything due when the connection opened has been sent.
    case queueEmpty
    /// Client → server: these queue entries are stored on the device; delete them.
    case ack(seqs: [Int64])
    /// Server → authenticator: a signed push challenge (docs/PROTOCOL.md §3), not acknowledged; it expires.
    case mfaChallenge(jwt: String)
    /// Client → server: whether someone sees this connection's events (a browser tab shown or hidden). A
    /// connection is taken as seen until it says otherwise; while seen, its device gets no push notification.
    case visibility(visible: Bool)
    case unknown(type: String)

    public static let maxClientFrame = 64 * 1024

    private enum Key: String, CodingKey {
        case type, ticket, deviceId, window, pingInterval, seq, message, seqs, jwt, visible
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        let type = try c.decode(String.self, forKey: .type)
        switch type {
        case "hello": self = .hello(ticket: try c.decode(String.self, forKey: .ticket))
        case "ready":
            self = .ready(
                deviceId: try c.decode(String.self, forKey: .deviceId),
                window: try c.decode(Int.self, forKey: .window),
                pingInterval: try c.decode(Int.self, forKey: .pingInterval)
            )
        case "message":
            self = .message(
                seq: try c.decode(Int64.self, forKey: .seq),
                message: try c.decode(QueuedMessage.self, forKey: .message)
            )
        case "queueEmpty": self = .queueEmpty
        case "ack": self = .ack(seqs: try c.decode([Int64].self, forKey: .seqs))
        case "mfaChallenge": self = .mfaChallenge(jwt: try c.decode(String.self, forKey: .jwt))
        case "visibility": self = .visibility(visible: try c.decode(Bool.self, forKey: .visible))
        default: self = .unknown(type: type)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .hello(let ticket):
            try c.encode("hello", forKey: .type)
            try c.encode(ticket, forKey: .ticket)
        case .ready(let deviceId, let window, let pingInterval):
            try c.encode("ready", forKey: .type)
            try c.encode(deviceId, forKey: .deviceId)
            try c.encode(window, forKey: .window)
            try c.encode(pingInterval, forKey: .pingInterval)
        case .message(let seq, let message):
            try c.encode("message", forKey: .type)
            try c.encode(seq, forKey: .seq)
            try c.encode(message, forKey: .message)
        case .queueEmpty:
            try c.encode("queueEmpty", forKey: .type)
        case .ack(let seqs):
            try c.encode("ack", forKey: .type)
            try c.encode(seqs, forKey: .seqs)
        case .mfaChallenge(let jwt):
            try c.encode("mfaChallenge", forKey: .type)
            try c.encode(jwt, forKey: .jwt)
        case .visibility(let visible):
            try c.encode("visibility", forKey: .type)
            try c.encode(visible, forKey: .visible)
        case .unknown(let type):
            try c.encode(type, forKey: .type)
        }
    }
}

/// The push channel's close codes (docs/PROTOCOL.md §2).
public enum PushCloseCode: UInt16, Sendable, CaseIterable {
    /// The server is shutting down: reconnect with backoff.
    case goingAway = 1001
    /// A frame that is not a JSON object of a known client type, a binary frame, a frame over 64 KiB.
    case protocolError = 4400
    /// No `hello` within 10 s, or a ticket that is unknown, used or expired: get a new ticket.
    case unauthenticated = 4401
    /// The device was revoked or its session ended: do not reconnect with it.
    case revoked = 4403
    /// Nothing arrived for three ping intervals.
    case timedOut = 4408
    /// The same device connected again; this connection was replaced.
    case replaced = 4409
}

/// `GET /v1/push/vapid-key`: the server's VAPID public key (RFC 8292), the `applicationServerKey` a browser
/// subscribes to Web Push with (docs/PROTOCOL.md §2.1).
public struct VAPIDPublicKey: Codable, Equatable, Sendable {
    /// The uncompressed P-256 point, 65 bytes.
    public var publicKey: Base64URL
    public init(publicKey: Base64URL) { self.publicKey = publicKey }
}

/// `PUT /v1/devices/current/push-subscription`: this browser's Web Push subscription for the device, as
/// `PushSubscription.toJSON()` gives it (docs/PROTOCOL.md §2.2). `expirationTime` is accepted and ignored.
public struct WebPushSubscription: Codable, Equatable, Sendable {
    public struct Keys: Codable, Equatable, Sendable {
        /// The browser's P-256 key, uncompressed (65 bytes), base64url.
        public var p256dh: String
        /// The 16-byte authentication secret, base64url.
        public var auth: String
        public init(p256dh: String, auth: String) {
            self.p256dh = p256dh
            self.auth = auth
        }
    }
    public var endpoint: String
    public var expirationTime: Double?
    public var keys: Keys
    public init(endpoint: String, keys: Keys, expirationTime: Double? = nil) {
        self.endpoint = endpoint
        self.keys = keys
        self.expirationTime = expirationTime
    }
}

/// `PUT /v1/devices/current/apns-token`: an iOS app's device token (PingOne's `setDeviceToken`) and which
/// APNs environment issued it.
public struct APNsDeviceToken: Codable, Equatable, Sendable {
    /// The token's bytes, lower-case hex (32 bytes today; up to 100 accepted).
    public var token: String
    /// `production` or `sandbox` (PingOne's `APNSDeviceTokenType`).
    public var environment: String
    public init(token: String, environment: String) {
        self.token = token
        self.environment = environment
    }
}

/// What a device's push target is: `webpush` with its push service's origin, or `apns` with its environment.
public struct PushTargetInfo: Codable, Equatable, Sendable {
    public var channel: String
    /// Web Push: the push service's origin (`https://fcm.googleapis.com`); the endpoint itself is not shown back.
    public var origin: String?
    public var environment: String?
    public var createdAt: Date
    public init(channel: String, origin: String?, environment: String?, createdAt: Date) {
        self.channel = channel
        self.origin = origin
        self.environment = environment
        self.createdAt = createdAt
    }
}
