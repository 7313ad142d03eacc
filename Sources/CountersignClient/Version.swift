import CountersignAPI

extension CountersignClient {
    /// This release, as `countersign --version` prints it and the SDK's user agent carries it.
    public static let version = CountersignRelease.version
    /// What the SDK calls itself unless an app passes its own user agent.
    public static let defaultUserAgent = "countersign-swift/\(version)"
}
