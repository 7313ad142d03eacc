import ArgumentParser
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `countersign agent`: holds this config directory's unlocked keys in memory for a bounded time, so
/// that message and authenticator commands need no passphrase meanwhile (as ssh-agent does for SSH).
/// Off unless started. It serves only its own user (SO_PEERCRED) on `agent.sock` (mode 0600, in the
/// 0700 config directory), never writes a key or the passphrase anywhere, refuses core dumps and ptrace
/// by other processes of the user (PR_SET_DUMPABLE 0), and exits after `--idle` without a request or at
/// `--max` in any case, removing its socket.
struct AgentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Hold this config directory's unlocked keys in memory for a while, so commands need no passphrase.",
        discussion: """
            Runs in the foreground (start it with `countersign agent &`, or from a user service): asks for the passphrase \
            once, unlocks the keys of this directory's device (current and rotated) or authenticator, and answers the \
            commands of the same user on agent.sock in the config directory until --idle passes without a request \
            (default 15m) or --max since it started (default 8h, at most 24h). `countersign agent stop` ends it at once; \
            `countersign agent status` says how long it has left. Commands given --passphrase-file never ask it.
            """,
        subcommands: [Run.self, Stop.self, Status.self],
        defaultSubcommand: Run.self
    )

    static var socketURL: URL { PrivateFiles.config.appendingPathComponent("agent.sock") }

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "run", abstract: "Start the agent (the default).")
        @Option(
            name: .long,
            help: ArgumentHelp("Exit after this long without a request: 30s, 15m, 2h.", valueName: "duration")
        ) var idle = "15m"
        @Option(
            name: .long,
            help: ArgumentHelp("Exit this long after starting, whatever happens: at most 24h.", valueName: "duration")
        ) var max = "8h"
        @Option(
            name: .long,
            help: ArgumentHelp("Read the keys' passphrase from the first line of this file.", valueName: "file")
        )
        var passphraseFile: String?

        static func seconds(_ text: String, _ flag: String) throws -> Int {
            let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600]
            guard let unit = text.last.flatMap({ units[$0] }), let n = Int(text.dropLast()), n > 0, n * unit <= 86_400
            else {
                throw ValidationError("\(flag) takes a duration from 1s to 24h, like 30s, 15m or 2h; not \(text)")
            }
            return n * unit
        }

        func validate() throws {
            let i = try Self.seconds(idle, "--idle")
            let m = try Self.seconds(max, "--max")
            if i > m { throw ValidationError("--idle (\(idle)) is longer than --max (\(max))") }
        }

        func run() throws {
            let idleSeconds = try Self.seconds(idle, "--idle")
            let maxSeconds = try Self.seconds(max, "--max")
            // No core dump, and no ptrace by the user's other processes: the keys stay in this process.
            // 4 is PR_SET_DUMPABLE.
            _ = agentPrctl(4, 0, 0, 0, 0)
            let keys = try Self.unlock(passphraseFile: passphraseFile)
            let server = try AgentSocket.listen(at: AgentCommand.socketURL.path)
            defer {
                close(server)
                unlink(AgentCommand.socketURL.path)
            }
            // SIGINT, SIGTERM and SIGHUP end the loop below (checked between polls), so the socket is removed.
            var blocked = sigset_t()
            sigemptyset(&blocked)
            for s in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&blocked, s) }
            sigprocmask(SIG_BLOCK, &blocked, nil)
            let started = Date()
            let end = started.addingTimeInterval(TimeInterval(maxSeconds))
            var idleEnd = started.addingTimeInterval(TimeInterval(idleSeconds))
            Terminal.warn(
                """
                agent holding \(keys.count) key\(keys.count == 1 ? "" : "s") for \(PrivateFiles.config.path) on \(AgentCommand.socketURL.path); \
                it exits after \(idle) without a request, at \(PrivateFiles.date(end)) at the latest, or on `countersign agent stop`
                """
            )
            loop: while true {
                let now = Date()
                if now >= end || now >= idleEnd { break }
                var pending = sigset_t()
                sigpending(&pending)
                if sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1
                    || sigismember(&pending, SIGHUP) == 1
                {
                    break
                }
                var p = pollfd(fd: server, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 1000) > 0 else { continue }
                let client = accept(server, nil, nil)
                guard client >= 0 else { continue }
                defer { close(client) }
                guard AgentSocket.peerIsMe(client), let request = AgentSocket.readLine(client) else { continue }
                let parts = request.split(separator: " ")
                switch (parts.first, parts.count) {
                case ("KEY"?, 2):
                    if let key = keys[String(parts[1])], let pem = try? key.pem(passphrase: [UInt8]?.none) {
                        idleEnd = Date().addingTimeInterval(TimeInterval(idleSeconds))
                        AgentSocket.write(client, "OK\n" + pem)
                    } else {
                        AgentSocket.write(client, "NO\n")
                    }
                case ("STATUS"?, 1):
                    AgentSocket.write(
                        client,
                        "OK \(keys.count) \(Int(idleEnd.timeIntervalSinceNow)) \(Int(end.timeIntervalSinceNow))\n"
                    )
                case ("STOP"?, 1):
                    AgentSocket.write(client, "OK\n")
                    break loop
                default:
                    AgentSocket.write(client, "NO\n")
                }
            }
            Terminal.warn("agent stopped; the keys are no longer held")
        }

        /// The keys of this directory's device (every key file device.json lists) or authenticator, by key ID.
        static func unlock(passphraseFile: String?) throws -> [String: Identity] {
            var files: [String] = []
            if let device = DeviceFile.loadQuietly() {
                files = [device.keyFile] + device.oldKeyFiles + (device.pendingKeyFile.map { [$0] } ?? [])
            } else if let authenticator = try AuthenticatorFile.load() {
                files = [authenticator.keyFile]
            }
            guard !files.isEmpty else {
                throw CLIError.usage(
                    "no device or authenticator in \(PrivateFiles.config.path), so no keys to hold; run it in the config directory whose keys you use"
                )
            }
            var passphrase: [UInt8]?
            var keys: [String: Identity] = [:]
            for relative in files {
                let path = PrivateFiles.config.appendingPathComponent(relative).path
                let file = try KeyFiles.load(path)
                let identity = try KeyFiles.privateKey(file, try PrivateKeyOptions.parse([])) { text, _ in
                    try Identity(pem: text) {
                        if let passphrase { return passphrase }
                        let read =
                            try passphraseFile.map { try Terminal.passphrase(fromFile: $0) }
                            ?? Terminal.ask(
                                "Passphrase for the keys of \(PrivateFiles.config.path): ",
                                instead: "use --passphrase-file FILE"
                            )
                        passphrase = read
                        return read
                    }
                }
                keys[Hex.encode(identity.publicKey.fingerprint.bytes)] = identity
            }
            return keys
        }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop this config directory's agent now.")
        func run() throws {
            guard AgentSocket.ask("STOP") != nil else {
                throw CLIError.usage("no agent runs for \(PrivateFiles.config.path)")
            }
            print("agent stopped")
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say whether an agent holds this config directory's keys, and for how long."
        )
        func run() throws {
            guard let answer = AgentSocket.ask("STATUS"), answer.hasPrefix("OK ") else {
                throw CLIError.usage(
                    "no agent runs for \(PrivateFiles.config.path); start one with `countersign agent &`"
                )
            }
            let n = answer.dropFirst(3).split(separator: " ").compactMap {
                Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            guard n.count == 3 else { throw CLIError.io("the agent answered something unexpected") }
            print(
                "agent holds \(n[0]) key\(n[0] == 1 ? "" : "s"); exits after \(n[1]) s without a request, in \(n[2]) s at the latest"
            )
        }
    }
}

/// The agent's Unix socket, both sides: one line of request, one answer, then the connection closes.
enum AgentSocket {
    static func address(_ path: String) throws -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw CLIError.usage(
                "the config directory's path is too long for the agent's socket (\(path)); use a shorter COUNTERSIGN_CONFIG_DIR"
            )
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        return addr
    }

    /// Binds the socket mode 0600 (the umask is set around bind); a socket left by an agent that died is
    /// replaced, a live agent is not.
    static func listen(at path: String) throws -> Int32 {
        var addr = try address(path)
        if ask("STATUS") != nil {
            throw CLIError.usage(
                "an agent already runs for \(PrivateFiles.config.path); `countersign agent stop` ends it"
            )
        }
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw CLIError.io("cannot open the agent's socket: \(String(cString: strerror(errno)))") }
        let old = umask(0o177)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(old)
        guard bound == 0, Glibc.listen(fd, 16) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw CLIError.io("cannot listen on \(path): \(why)")
        }
        return fd
    }

    /// The connecting process runs as this user (root is not trusted either: it needs no agent).
    static func peerIsMe(_ fd: Int32) -> Bool {
        // struct ucred: pid, uid, gid.
        var cred: (Int32, UInt32, UInt32) = (0, 0, 0)
        var size = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) == 0 && size == 12 && cred.1 == geteuid()
    }

    /// One line, at most 256 bytes, within 2 seconds.
    static func readLine(_ fd: Int32) -> String? {
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var line: [UInt8] = []
        var c: UInt8 = 0
        while line.count < 256 {
            let n = read(fd, &c, 1)
            if n < 0, errno == EINTR { continue }
            guard n == 1 else { return nil }
            if c == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(c)
        }
        return nil
    }

    static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }
            bytes = bytes.dropFirst(n)
        }
    }

    /// The agent's answer to `request`, or nil when no agent answers (none runs, or a stale socket).
    static func ask(_ request: String) -> String? {
        let path = AgentCommand.socketURL.path
        guard FileManager.default.fileExists(atPath: path), var addr = try? address(path) else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0, peerIsMe(fd) else { return nil }
        write(fd, request + "\n")
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while answer.count < 65_536 {
            let n = read(fd, &buffer, buffer.count)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            answer += buffer[0..<n]
        }
        return answer.isEmpty ? nil : String(decoding: answer, as: UTF8.self)
    }

    /// The key of `path` (a key file in this directory's keys/, named by its key ID) from a running
    /// agent, or nil. The key must be the one the file name says.
    static func identity(forKeyFile path: String) -> Identity? {
        let url = URL(fileURLWithPath: path)
        guard
            url.deletingLastPathComponent().standardizedFileURL.path
                == PrivateFiles.keysDirectory.standardizedFileURL.path,
            url.pathExtension == "key"
        else { return nil }
        let keyID = url.deletingPathExtension().lastPathComponent
        guard let answer = ask("KEY \(keyID)"), answer.hasPrefix("OK\n"),
            let identity = try? Identity(
                pem: String(answer.dropFirst(3)),
                passphrase: { throw KeyError.wrongPassphrase }
            ),
            Hex.encode(identity.publicKey.fingerprint.bytes) == keyID
        else { return nil }
        return identity
    }
}

#if canImport(Glibc)
/// glibc's `prctl(2)`, variadic in C.
@_silgen_name("prctl")
private func agentPrctl(_ option: Int32, _ a: UInt, _ b: UInt, _ c: UInt, _ d: UInt) -> Int32
#endif
