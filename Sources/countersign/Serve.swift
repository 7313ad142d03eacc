import ArgumentParser
import CountersignServer
import Foundation
import Logging

extension ServerConfiguration.CaptchaPolicy: ExpressibleByArgument {}

/// `countersign serve`: the server. Flags win over environment variables, which win over defaults.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the Countersign server.",
        discussion: """
        Prints the URL it listens on, then serves until SIGINT or SIGTERM (finishing requests in flight).
        Environment: COUNTERSIGN_HOST, COUNTERSIGN_PORT, COUNTERSIGN_DATABASE, COUNTERSIGN_CAPTCHA, COUNTERSIGN_LOG_LEVEL;
        COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS (per 10 minutes, default 20) and
        COUNTERSIGN_REGISTRATIONS_PER_ADDRESS (per hour, default 10) set the per-address limits;
        COUNTERSIGN_LOCKOUT_DELAY_AFTER (3), COUNTERSIGN_LOCKOUT_DELAY_MINUTES (30) and
        COUNTERSIGN_LOCKOUT_LOCK_AFTER (5) set the lockout rule.
        The default database is sqlite:countersign.sqlite in the current directory, created on first start.
        """
    )

    @Option(help: "Address to listen on (default 127.0.0.1, or $COUNTERSIGN_HOST).")
    var host: String?

    @Option(help: "Port to listen on; 0 picks a free one (default 8080, or $COUNTERSIGN_PORT).")
    var port: Int?

    @Option(help: ArgumentHelp("sqlite:PATH or postgres://user:pass@host:port/db (default sqlite:countersign.sqlite, or $COUNTERSIGN_DATABASE).", valueName: "url"))
    var database: String?

    @Option(help: "When sign-in and registration need a captcha: always (default), risk (after a failure), off. Or $COUNTERSIGN_CAPTCHA.")
    var captcha: ServerConfiguration.CaptchaPolicy?

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        var config = ServerConfiguration()
        config.host = host ?? env["COUNTERSIGN_HOST"] ?? config.host
        if let p = port ?? env["COUNTERSIGN_PORT"].flatMap({ Int($0) }) { config.port = p }
        if env["COUNTERSIGN_PORT"] != nil, port == nil, Int(env["COUNTERSIGN_PORT"]!) == nil {
            throw ValidationError("COUNTERSIGN_PORT is not a number")
        }
        guard (0...65535).contains(config.port) else { throw ValidationError("--port must be 0 to 65535") }
        config.database = try DatabaseLocation(parsing: database ?? env["COUNTERSIGN_DATABASE"] ?? "sqlite:countersign.sqlite")
        if let c = captcha { config.captcha = c } else if let c = env["COUNTERSIGN_CAPTCHA"] {
            guard let policy = ServerConfiguration.CaptchaPolicy(rawValue: c) else { throw ValidationError("COUNTERSIGN_CAPTCHA takes always, risk or off") }
            config.captcha = policy
        }
        for (name, window, apply) in [("COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS", 600.0, { (c: inout ServerConfiguration, l: AddressThrottle.Limit) in c.signInFailuresPerAddress = l }),
                                      ("COUNTERSIGN_REGISTRATIONS_PER_ADDRESS", 3600.0, { (c: inout ServerConfiguration, l: AddressThrottle.Limit) in c.registrationsPerAddress = l })] {
            guard let text = env[name] else { continue }
            guard let n = Int(text), n >= 1 else { throw ValidationError("\(name) takes a whole number of at least 1") }
            apply(&config, AddressThrottle.Limit(capacity: n, window: window))
        }
        func number(_ name: String, _ fallback: Int) throws -> Int {
            guard let text = env[name] else { return fallback }
            guard let n = Int(text), n >= 1 else { throw ValidationError("\(name) takes a whole number of at least 1") }
            return n
        }
        let delayAfter = try number("COUNTERSIGN_LOCKOUT_DELAY_AFTER", config.lockout.delayAfter)
        let lockAfter = try number("COUNTERSIGN_LOCKOUT_LOCK_AFTER", config.lockout.lockAfter)
        guard lockAfter >= delayAfter else { throw ValidationError("COUNTERSIGN_LOCKOUT_LOCK_AFTER must be at least COUNTERSIGN_LOCKOUT_DELAY_AFTER") }
        config.lockout = LockoutPolicy(delayAfter: delayAfter, delay: TimeInterval(try number("COUNTERSIGN_LOCKOUT_DELAY_MINUTES", 30) * 60),
                                       lockAfter: lockAfter)
        var logger = Logger(label: "countersign")
        logger.logLevel = env["COUNTERSIGN_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        let db = config.database
        try await CountersignServer.run(config: config, logger: logger) { url in
            // Unbuffered: whoever started the server (a script, a test) reads this line at once.
            FileHandle.standardOutput.write(Data("countersign listening on \(url) (database \(db))\n".utf8))
        }
    }
}

/// `countersign admin …`: operations on the database, run on the server machine.
struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Administer a Countersign database directly.",
        subcommands: [Unlock.self]
    )

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Clear an account's failed sign-ins and lock.")

        @Argument(help: "The username to unlock.")
        var username: String

        @Option(help: ArgumentHelp("sqlite:PATH or postgres://… (default sqlite:countersign.sqlite, or $COUNTERSIGN_DATABASE).", valueName: "url"))
        var database: String?

        func run() async throws {
            let location = try DatabaseLocation(parsing: database ?? ProcessInfo.processInfo.environment["COUNTERSIGN_DATABASE"] ?? "sqlite:countersign.sqlite")
            var logger = Logger(label: "countersign")
            logger.logLevel = .warning
            let message = try await CountersignServer.unlock(username: username, database: location, logger: logger)
            print(message)
        }
    }
}
