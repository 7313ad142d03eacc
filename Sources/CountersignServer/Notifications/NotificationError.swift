/// Why a device's push target was refused (docs/PROTOCOL.md §2.2). Closed: the HTTP edge maps each case to
/// one problem (`NotificationError+Problem.swift`; docs/openapi.yaml lists them).
public enum NotificationError: Error, Equatable, Sendable {
    /// A field of the subscription or token is malformed: not https, too long, a key off the curve.
    case invalidSubscription(field: String, reason: String)
    /// The endpoint's host resolves to an address the server does not send to (loopback, private, link
    /// local…), and the administrator has not allowed it by name (`push-allowed-hosts`).
    case endpointNotPublic(String)
    /// APNs is not configured on this server (no `.p8` key), so a device token has nowhere to go.
    case apnsOff
    /// This device has no push target.
    case none
}
