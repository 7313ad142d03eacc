import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Checks `--host` and `--port` before anything else happens, and turns bind failures into sentences
/// that name the address and what to do.
enum ListenAddress {
    /// `host:port`, with brackets around an IPv6 host.
    static func display(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Resolves the host and binds a throwaway socket to it, with the options NIO's server uses
    /// (SO_REUSEADDR), then closes it. Another process may still take the port before the real bind;
    /// `describe(bindError:)` words that case the same way.
    static func check(host: String, port: Int) throws {
        let address: SocketAddress
        do {
            address = try SocketAddress.makeAddressResolvingHost(host, port: port)
        } catch {
            throw ConfigurationError(
                "--host \(host) is neither an IP address nor a name this machine resolves; use an address of this machine, e.g. 127.0.0.1, 0.0.0.0 or ::"
            )
        }
        let fd = socket(Int32(address.protocol.rawValue), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw ConfigurationError(
                "cannot open a socket for \(display(host, port)): \(String(cString: strerror(errno)))"
            )
        }
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let result = address.withSockAddr { sa, len in bind(fd, sa, socklen_t(len)) }
        guard result == 0 else { throw ConfigurationError(message(errno: errno, host: host, port: port)) }
    }

    static func describe(bindError error: any Error, host: String, port: Int) -> String? {
        guard let io = error as? IOError else { return nil }
        return message(errno: io.errnoCode, host: host, port: port)
    }

    static func message(errno code: Int32, host: String, port: Int) -> String {
        let place = display(host, port)
        switch code {
        case EADDRINUSE: return "\(place) is already in use; pick another --port, or stop what listens there"
        case EADDRNOTAVAIL:
            return "\(host) is not an address of this machine; use one it has, e.g. 127.0.0.1, 0.0.0.0 or ::"
        case EACCES: return "binding \(place) needs privileges (ports below 1024 do); pick a --port of 1024 or more"
        default: return "cannot listen on \(place): \(String(cString: strerror(code)))"
        }
    }
}
