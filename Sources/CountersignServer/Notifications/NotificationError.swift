/// Why a device's push target was refused (docs/PROTOCOL.md §2.2). Closed: the HTTP edge maps each case to
/// one problem (`NotificationError+Problem.swift`; docs/openapi.yaml lists them).
public enum NotificationError: Error, Equatable, Sendable {
    /// A field of the subscription or token is malformed: not https, too long, a key off the curve.
    case invalidSubscription(field: String, reason: String)
    /// The endpoint's host (named) resolves to an address the server does not send to (loopback, private, link
    /// local…) or to none, and the administrator has not allowed it (`push-allowed-hosts`). Which address is
    /// not said: it would tell a subscriber what this server's DNS says of internal names.
    case endpointNotPublic(String)
    /// APNs is not configured on this server (no `.p8` key), so a device token has nowhere to go.
    case apnsOff
    /// This device has no push target.
    case none
}
