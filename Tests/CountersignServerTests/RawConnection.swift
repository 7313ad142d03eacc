import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to 127.0.0.1, optionally from another loopback source address (127.0.0.2…),
/// for what an HTTP client library will not do: send half a request, nothing at all, or come from a
/// chosen address.
final class RawConnection {
    let fd: Int32

    init(port: Int, from source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let r = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard r == 0 else {
                close(fd)
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL)
            }
        }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let r = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard r == 0 else {
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED)
        }
    }

    deinit { close(fd) }

    /// False when the peer has closed (the write fails).
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Reads until the peer closes or `timeout` passes; `closed` says which.
    func readUntilClosed(timeout: TimeInterval) -> (data: Data, closed: Bool) {
        var data = Data()
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000)))
            guard ready > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return (data, true) }
            data.append(contentsOf: buffer[0..<n])
        }
        return (data, false)
    }

    /// Runs blocking socket work on a Dispatch thread: on the cooperative pool (two threads here) it
    /// would starve every other test's server and database work.
    static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async { c.resume(with: Result { try work() }) }
        }
    }

    /// A whole request and its whole answer (the request asks the server to close afterwards).
    static func exchange(port: Int, from source: String? = nil, _ request: String) async throws -> String {
        try await blocking {
            let c = try RawConnection(port: port, from: source)
            c.send(request)
            return String(decoding: c.readUntilClosed(timeout: 10).data, as: UTF8.self)
        }
    }
}
