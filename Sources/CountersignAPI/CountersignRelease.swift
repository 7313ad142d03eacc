/// This release, as `countersign --version` and `countersign-server --version` print it and the SDK's user
/// agent carries it.
public enum CountersignRelease {
    public static let version = "0.1.0"
}
