/// A request made with an account session: the session and its account.
public struct Authenticated: Sendable {
    public var session: SessionRecord
    public var account: AccountRecord
}

/// A request made with a device session: the session, its device and the device's account.
public struct DeviceAuthenticated: Sendable {
    public var session: DeviceSessionRecord
    public var device: DeviceRecord
    public var account: AccountRecord
}
