import Foundation

/// Runs the built `countersign` binary and other real tools (openssl, python3) in a scratch directory
/// (CountersignCLITests and CountersignSystemTests).
public struct CLI: Sendable {
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()
    /// The `countersign` built beside this test runner (the runner lives in `<scratch>/debug/`), so a
    /// build with `--scratch-path` tests its own binary; else the default `.build`.
    public static let binary: String = {
        // Another build's binary, to watch a new test fail on the code before a fix.
        if let other = ProcessInfo.processInfo.environment["COUNTERSIGN_TEST_CLI"] { return other }
        let runner =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        for dir in [runner, CommandLine.arguments[0]].map({ URL(fileURLWithPath: $0).deletingLastPathComponent() }) {
            let candidate = dir.appendingPathComponent("countersign").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        for config in ["debug", "release"] {
            let path = packageRoot.appendingPathComponent(".build/\(config)/countersign").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return packageRoot.appendingPathComponent(".build/debug/countersign").path
    }()
    public static let interop = packageRoot.appendingPathComponent("Tests/interop").path
    public static let fixtures = packageRoot.appendingPathComponent("Tests/CountersignCryptoTests/Vectors/keys").path

    public let dir: URL

    public init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("cs-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    public struct Output: Sendable {
        public var status: Int32
        public var stdout: Data
        public var stderr: String
        public var text: String { String(decoding: stdout, as: UTF8.self) }

        public init(status: Int32, stdout: Data, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }
    }

    /// `countersign ARGS` with optional stdin bytes.
    @discardableResult
    public func cs(_ args: String..., stdin: Data? = nil) throws -> Output {
        try run(Self.binary, args, stdin: stdin)
    }

    @discardableResult
    public func run(_ tool: String, _ args: [String], stdin: Data? = nil) throws -> Output {
        let r = try Spawned.run(
            tool.hasPrefix("/") ? tool : "/usr/bin/env",
            tool.hasPrefix("/") ? args : [tool] + args,
            directory: dir.path,
            stdin: stdin
        )
        return Output(status: r.status, stdout: r.stdout, stderr: String(decoding: r.stderr, as: UTF8.self))
    }

    /// `bash -c SCRIPT` with `$0` set to the countersign binary, for process substitution and pipes.
    @discardableResult
    public func bash(_ script: String, stdin: Data? = nil) throws -> Output {
        try run("/bin/bash", ["-c", script, Self.binary], stdin: stdin)
    }

    /// countersign in a new session: no controlling terminal, so nothing can be asked on /dev/tty.
    @discardableResult
    public func csWithoutTerminal(_ args: String...) throws -> Output {
        try run("/usr/bin/setsid", ["-w", Self.binary] + args)
    }

    public func chmod(_ name: String, _ mode: Int) throws {
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path(name))
    }

    public func mode(_ name: String) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: path(name))[.posixPermissions] as? Int
    }

    public func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
    public func write(_ name: String, _ data: Data) throws { try data.write(to: dir.appendingPathComponent(name)) }

    /// A P-256 private key in PKCS#8 PEM, as Apple's APNs `.p8` files are, made by OpenSSL as `name` here with
    /// mode 0600; its path.
    public func p256KeyFile(_ name: String) throws -> String {
        let path = self.path(name)
        let made = try run(
            "/usr/bin/openssl",
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path]
        )
        guard made.status == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "openssl: \(made.stderr)"])
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }
    public func read(_ name: String) -> Data? { FileManager.default.contents(atPath: path(name)) }
    public func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path(name)) }
    /// Files in the scratch directory, to prove no temporary was left behind.
    public func listing() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()) ?? []
    }

    public static func random(_ n: Int) -> Data {
        let urandom = FileHandle(forReadingAtPath: "/dev/urandom")!
        defer { try? urandom.close() }
        return urandom.readData(ofLength: n)
    }
}
