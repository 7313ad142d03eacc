/// How long one request may take and how much it may bring back before the client gives up on it, so a
/// server that never answers, answers byte by byte or never stops answering costs seconds and megabytes,
/// never the machine (issue 19.11, 19.12). The values are in docs/CLI.md ("Deadlines and size caps").
public struct RequestLimits: Sendable, Equatable {
    /// To open a connection: TCP connect and the TLS handshake. One value for every call (the connection
    /// pool is shared); a refused connection fails at once.
    public static let connect: Duration = .seconds(10)
    /// From sending the request to the end of the response's headers.
    public var firstByte: Duration
    /// From sending the request to the last byte of the response's body.
    public var whole: Duration
    /// The largest response body accepted, in bytes.
    public var maxBody: Int

    public init(firstByte: Duration, whole: Duration, maxBody: Int) {
        self.firstByte = firstByte
        self.whole = whole
        self.maxBody = maxBody
    }

    /// Every call but the ones below: short enough for a person waiting at a terminal, long enough for a
    /// loaded server's password hashing (which answers 503 rather than queue longer).
    public static let interactive = RequestLimits(firstByte: .seconds(20), whole: .seconds(30), maxBody: 4 << 20)

    /// A long poll that the server holds up to `wait` seconds before answering.
    public static func longPoll(wait: Int) -> RequestLimits {
        var limits = interactive
        limits.firstByte += .seconds(max(0, wait))
        limits.whole += .seconds(max(0, wait))
        return limits
    }

    /// A page of this device's queue: the server fills one up to 8 MiB of envelopes (one envelope is at most
    /// 1,081,863 bytes, docs/SPEC.md §8.5), which base64 in JSON makes at most ~12.2 MB; a minute to read it.
    public static func messagePage(wait: Int) -> RequestLimits {
        var limits = longPoll(wait: wait)
        limits.whole += .seconds(30)
        limits.maxBody = 16 << 20
        return limits
    }
}
