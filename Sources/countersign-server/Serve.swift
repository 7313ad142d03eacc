import ArgumentParser
import CountersignServer
import Foundation
import Logging

extension ServerConfiguration.CaptchaPolicy: ExpressibleByArgument {}

/// `countersign-server serve`: the server. A flag wins over its environment variable, which wins over the
/// configuration file, which wins over the default (``ServerSettings``).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the Countersign server.",
        discussion: """
            Prints the URL it listens on, then serves until SIGINT or SIGTERM (finishing requests in flight).
            Environment: COUNTERSIGN_HOST, COUNTERSIGN_PORT, COUNTERSIGN_DATABASE, COUNTERSIGN_CAPTCHA, COUNTERSIGN_LOG_LEVEL,
            COUNTERSIGN_LOG_FORMAT;
            COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS (per 10 minutes, default 20) and
            COUNTERSIGN_REGISTRATIONS_PER_ADDRESS (per hour, default 10) set the per-address limits;
            COUNTERSIGN_LOCKOUT_DELAY_AFTER (3), COUNTERSIGN_LOCKOUT_DELAY_MINUTES (30) and
            COUNTERSIGN_LOCKOUT_LOCK_AFTER (5) set the lockout rule; COUNTERSIGN_CAPTCHA_RISK_MINUTES (15) is how long
            a failed sign-in makes the risk policy ask its address and username for a captcha.
            COUNTERSIGN_IDLE_TIMEOUT and COUNTERSIGN_READ_TIMEOUT (seconds) stand in for the timeout flags;
            COUNTERSIGN_EXIT_WITH_PARENT=1 makes the server shut down when the process that started it dies;
            COUNTERSIGN_SEND_BATCH (128) is how many concurrent writes share one group commit (1: none do);
            COUNTERSIGN_MESSAGE_RETENTION_DAYS (30) is how long an unacknowledged message is kept after it is due;
            COUNTERSIGN_SENDS_PER_ACCOUNT (300 a minute) and COUNTERSIGN_MESSAGE_QUOTA_MB (1024 MiB of stored
            envelopes) bound what one account sends and keeps (0: no limit);
            COUNTERSIGN_STAY_SIGNED_IN_DAYS (30; 0: never) and COUNTERSIGN_STAY_SIGNED_IN_HOURS_WITHOUT_DEVICE (12)
            are how long a browser stays signed in unused, bound to its device's key or to a key of its own.
            COUNTERSIGN_ADMIN_CONTACT (none) is whom a locked-out user is told to ask: "it@example.com", "the IT desk, 555-0100".
            COUNTERSIGN_VAPID_SUBJECT (none) is the mailto: or https: contact every Web Push token carries;
            COUNTERSIGN_PUSH_ALLOWED_HOSTS (none; comma-separated) are push hosts sent to at any address and over http
            (a self-hosted ntfy): others must be https and resolve to public addresses.
            APNs, for iOS apps built on the SDK: COUNTERSIGN_APNS_KEY_FILE (the .p8 key), COUNTERSIGN_APNS_KEY_ID,
            COUNTERSIGN_APNS_TEAM_ID and COUNTERSIGN_APNS_TOPIC (the app's bundle ID), all four or none;
            COUNTERSIGN_APNS_TIME_SENSITIVE=0 sends sign-in requests as active, not time-sensitive.
            The default database is sqlite:countersign.sqlite in the current directory, created on first start.
            Every variable but COUNTERSIGN_EXIT_WITH_PARENT can also be set in a JSON configuration file (--config FILE or
            $COUNTERSIGN_CONFIG) under its name without COUNTERSIGN_, in lower case with dashes:
            {"port": 8080, "public-url": "https://auth.example.com", "trusted-proxies": ["10.0.0.0/8"]}.
            A flag wins over its variable, which wins over the file, which wins over the default.
            """
    )

    @Option(
        help: ArgumentHelp(
            "A JSON file of settings (docs/SERVER.md, CONFIGURATION), or $COUNTERSIGN_CONFIG; flags and variables win over it.",
            valueName: "file"
        )
    )
    var config: String?

    @Option(help: "Address to listen on (default 127.0.0.1, or $COUNTERSIGN_HOST).")
    var host: String?

    @Option(help: "Port to listen on; 0 picks a free one (default 8080, or $COUNTERSIGN_PORT).")
    var port: Int?

    @Option(
        help: ArgumentHelp(
            "sqlite:PATH or postgres://user:pass@host:port/db (default sqlite:countersign.sqlite, or $COUNTERSIGN_DATABASE).",
            valueName: "url"
        )
    )
    var database: String?

    @Option(
        help: ArgumentHelp(
            "Close a connection with no request in progress, or whose request headers have not all arrived, after this many seconds (default 30, or $COUNTERSIGN_IDLE_TIMEOUT).",
            valueName: "seconds"
        )
    )
    var idleTimeout: Int?

    @Option(
        help: ArgumentHelp(
            "Drop a request whose body has not all arrived this many seconds after its headers (default 30, or $COUNTERSIGN_READ_TIMEOUT).",
            valueName: "seconds"
        )
    )
    var readTimeout: Int?

    @Option(
        help:
            "When sign-in and registration need a captcha: always (default), risk (after a failure), off. Or $COUNTERSIGN_CAPTCHA."
    )
    var captcha: ServerConfiguration.CaptchaPolicy?

    @Option(
        help: ArgumentHelp(
            """
            The URL clients reach this server at (e.g. https://auth.example.com behind a TLS proxy), used in the pairing and \
            authentication-code URIs and QR codes; default: http:// and the Host each request names, or $COUNTERSIGN_PUBLIC_URL.
            """,
            valueName: "url"
        )
    )
    var publicURL: String?

    @Option(
        name: .customLong("webauthn-origin"),
        help: ArgumentHelp(
            """
            Another origin passkeys may be used from (repeatable), on the public URL's host or a subdomain of it, e.g. \
            https://app.example.com; or $COUNTERSIGN_WEBAUTHN_ORIGINS, comma-separated. Needs --public-url.
            """,
            valueName: "origin"
        )
    )
    var webAuthnOrigins: [String] = []

    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp(
            """
            A reverse proxy (an address or a network, repeatable, e.g. 10.0.0.0/8) whose Forwarded or X-Forwarded-For \
            header names the client, for throttles and the audit; or $COUNTERSIGN_TRUSTED_PROXIES, comma-separated.
            """,
            valueName: "cidr"
        )
    )
    var trustedProxies: [String] = []

    @Option(
        name: .customLong("trusted-proxy-header"),
        help: ArgumentHelp(
            """
            The one header the trusted proxies write the client into: x-forwarded-for (default) or forwarded; \
            or $COUNTERSIGN_TRUSTED_PROXY_HEADER. Have them clear or overwrite it.
            """,
            valueName: "name"
        )
    )
    var trustedProxyHeader: String?

    @Option(
        name: .customLong("log-format"),
        help: ArgumentHelp(
            "text (default) or json: one JSON object per line on standard error; or $COUNTERSIGN_LOG_FORMAT.",
            valueName: "format"
        )
    )
    var logFormat: String?

    @Option(
        name: .customLong("metrics-token-file"),
        help: ArgumentHelp(
            """
            A file holding the bearer token GET /metrics asks for (made, with a random token, if missing); without \
            one /metrics is off. Or $COUNTERSIGN_METRICS_TOKEN_FILE.
            """,
            valueName: "file"
        )
    )
    var metricsTokenFile: String?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let env = try ServerSettings.load(
            path: self.config ?? environment["COUNTERSIGN_CONFIG"],
            environment: environment
        )
        var config = ServerConfiguration()
        config.oidcClients = env.oidcClients
        config.host = host ?? env["COUNTERSIGN_HOST"] ?? config.host
        if let p = port ?? env["COUNTERSIGN_PORT"].flatMap({ Int($0) }) { config.port = p }
        if env["COUNTERSIGN_PORT"] != nil, port == nil, Int(env["COUNTERSIGN_PORT"]!) == nil {
            throw ValidationError("\(env.source("COUNTERSIGN_PORT")) is not a number")
        }
        guard (0...65535).contains(config.port) else { throw ValidationError("--port must be 0 to 65535") }
        config.database = try DatabaseLocation(
            parsing: database ?? env["COUNTERSIGN_DATABASE"] ?? "sqlite:countersign.sqlite"
        )
        if let text = publicURL ?? env["COUNTERSIGN_PUBLIC_URL"] {
            guard let url = ServerConfiguration.validPublicURL(text) else {
                throw ValidationError(
                    "--public-url (or \(env.source("COUNTERSIGN_PUBLIC_URL"))) must be an http:// or https:// URL with a host and nothing after it, e.g. https://auth.example.com"
                )
            }
            config.publicURL = url
        }
        let origins =
            webAuthnOrigins.isEmpty
            ? (env["COUNTERSIGN_WEBAUTHN_ORIGINS"] ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty } : webAuthnOrigins
        if !origins.isEmpty {
            guard let publicURL = config.publicURL, let rpID = URL(string: publicURL)?.host()?.lowercased() else {
                throw ValidationError(
                    "--webauthn-origin needs --public-url: the passkeys' RP ID is the public URL's host"
                )
            }
            for origin in origins {
                guard let url = ServerConfiguration.validPublicURL(origin),
                    let host = URL(string: url)?.host()?.lowercased(), host == rpID || host.hasSuffix("." + rpID)
                else {
                    throw ValidationError(
                        "--webauthn-origin \(origin.debugDescription) must be an http:// or https:// origin on \(rpID) or a subdomain of it, e.g. https://app.\(rpID)"
                    )
                }
                config.webAuthnOrigins.append(url)
            }
        }
        let proxies =
            trustedProxies.isEmpty
            ? (env["COUNTERSIGN_TRUSTED_PROXIES"] ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty } : trustedProxies
        let headerName = (trustedProxyHeader ?? env["COUNTERSIGN_TRUSTED_PROXY_HEADER"] ?? "x-forwarded-for")
            .lowercased()
        guard let header = TrustedProxies.Header(rawValue: headerName) else {
            throw ValidationError(
                "--trusted-proxy-header (or \(env.source("COUNTERSIGN_TRUSTED_PROXY_HEADER"))) takes x-forwarded-for or forwarded"
            )
        }
        do {
            config.trustedProxies = try TrustedProxies(parsing: proxies, header: header)
        } catch {
            throw ValidationError(error.description)
        }
        if let c = captcha {
            config.captcha = c
        } else if let c = env["COUNTERSIGN_CAPTCHA"] {
            guard let policy = ServerConfiguration.CaptchaPolicy(rawValue: c) else {
                throw ValidationError("\(env.source("COUNTERSIGN_CAPTCHA")) takes always, risk or off")
            }
            config.captcha = policy
        }
        for (name, window, apply) in [
            (
                "COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS", 600.0,
                { (c: inout ServerConfiguration, l: AddressThrottle.Limit) in c.signInFailuresPerAddress = l }
            ),
            (
                "COUNTERSIGN_REGISTRATIONS_PER_ADDRESS", 3600.0,
                { (c: inout ServerConfiguration, l: AddressThrottle.Limit) in c.registrationsPerAddress = l }
            ),
        ] {
            guard let text = env[name] else { continue }
            guard let n = Int(text), n >= 1 else {
                throw ValidationError("\(env.source(name)) takes a whole number of at least 1")
            }
            apply(&config, AddressThrottle.Limit(capacity: n, window: window))
        }
        func number(_ name: String, _ fallback: Int) throws -> Int {
            guard let text = env[name] else { return fallback }
            guard let n = Int(text), n >= 1 else {
                throw ValidationError("\(env.source(name)) takes a whole number of at least 1")
            }
            return n
        }
        for (flag, value, name, apply) in [
            (
                "--idle-timeout", idleTimeout, "COUNTERSIGN_IDLE_TIMEOUT",
                { (c: inout ServerConfiguration, t: TimeInterval) in c.idleTimeout = t }
            ),
            (
                "--read-timeout", readTimeout, "COUNTERSIGN_READ_TIMEOUT",
                { (c: inout ServerConfiguration, t: TimeInterval) in c.readTimeout = t }
            ),
        ] {
            let seconds: Int
            if let value {
                seconds = value
            } else if let text = env[name] {
                guard let n = Int(text) else {
                    throw ValidationError("\(env.source(name)) takes a whole number of seconds")
                }
                seconds = n
            } else {
                continue
            }
            guard (1...3600).contains(seconds) else {
                throw ValidationError("\(flag) (or \(env.source(name))) takes 1 to 3600 seconds, not \(seconds)")
            }
            apply(&config, TimeInterval(seconds))
        }
        // Said once the log is set up, in its format.
        var metricsTokenMade: String?
        if let path = metricsTokenFile ?? env["COUNTERSIGN_METRICS_TOKEN_FILE"] {
            config.metricsToken = try MetricsTokenFile.token(at: path) { metricsTokenMade = $0 }
        }
        switch env["COUNTERSIGN_AUTH_CODES_WITHOUT_APPROVAL"] {
        case nil, "0": break
        case "1": config.authCodesWithoutApproval = true
        default:
            throw ValidationError(
                "\(env.source("COUNTERSIGN_AUTH_CODES_WITHOUT_APPROVAL")) takes 1 (allow) or 0 (the default: every QR sign-in is approved)"
            )
        }
        if let text = env["COUNTERSIGN_SENDS_PER_ACCOUNT"] {
            guard let n = Int(text), n >= 0 else {
                throw ValidationError(
                    "\(env.source("COUNTERSIGN_SENDS_PER_ACCOUNT")) takes a whole number of sends a minute (0: no limit)"
                )
            }
            config.sendsPerAccount = n == 0 ? nil : AddressThrottle.Limit(capacity: n, window: 60)
        }
        if let text = env["COUNTERSIGN_MESSAGE_QUOTA_MB"] {
            guard let n = Int64(text), (0...(1 << 30)).contains(n) else {
                throw ValidationError(
                    "\(env.source("COUNTERSIGN_MESSAGE_QUOTA_MB")) takes a whole number of MiB (0: no quota)"
                )
            }
            config.messageQuotaBytes = n << 20
        }
        if let text = env["COUNTERSIGN_CONNECTIONS_PER_ADDRESS"] {
            guard let n = Int(text), n >= 0 else {
                throw ValidationError(
                    "\(env.source("COUNTERSIGN_CONNECTIONS_PER_ADDRESS")) takes a whole number (0: no cap)"
                )
            }
            config.connectionsPerAddress = n
        }
        if let text = env["COUNTERSIGN_STAY_SIGNED_IN_DAYS"] {
            guard let n = Int(text), (0...400).contains(n) else {
                throw ValidationError(
                    "\(env.source("COUNTERSIGN_STAY_SIGNED_IN_DAYS")) takes 0 to 400 days (0: no browser stays signed in)"
                )
            }
            config.bindingIdle = TimeInterval(n * 86_400)
        }
        if let contact = env["COUNTERSIGN_ADMIN_CONTACT"] {
            guard let checked = ServerConfiguration.adminContact(contact) else {
                throw ValidationError(
                    "\(env.source("COUNTERSIGN_ADMIN_CONTACT")) takes 1 to 200 printable characters on one line: whom a locked-out user asks"
                )
            }
            config.adminContact = checked
        }
        for host in (env["COUNTERSIGN_PUSH_ALLOWED_HOSTS"] ?? "").split(separator: ",") {
            let name = host.trimmingCharacters(in: .whitespaces).lowercased()
            guard let checked = ServerConfiguration.pushHost(name) else {
                throw ValidationError(
                    "\(env.source("COUNTERSIGN_PUSH_ALLOWED_HOSTS")) takes host names or addresses, comma-separated, without scheme, port or path (e.g. ntfy.internal,127.0.0.1); \(name.debugDescription) is not one"
                )
            }
            config.pushAllowedHosts.append(checked)
        }
        if let subject = env["COUNTERSIGN_VAPID_SUBJECT"] {
            guard let checked = ServerConfiguration.vapidSubject(subject) else {
                throw ValidationError(
                    "\(env.source("COUNTERSIGN_VAPID_SUBJECT")) takes a mailto: or https: URL push services can reach the operator at, e.g. mailto:ops@example.com"
                )
            }
            config.vapidSubject = checked
        }
        config.apns = try APNsSettingsReader.read(env)
        let withoutDevice = try number("COUNTERSIGN_STAY_SIGNED_IN_HOURS_WITHOUT_DEVICE", 12)
        guard withoutDevice <= 24 * 400 else {
            throw ValidationError(
                "\(env.source("COUNTERSIGN_STAY_SIGNED_IN_HOURS_WITHOUT_DEVICE")) takes 1 to 9600 hours"
            )
        }
        config.bindingIdleWithoutDevice = TimeInterval(withoutDevice * 3600)
        config.riskMemory = TimeInterval(try number("COUNTERSIGN_CAPTCHA_RISK_MINUTES", 15) * 60)
        config.sendBatch = try number("COUNTERSIGN_SEND_BATCH", config.sendBatch)
        let retention = try number("COUNTERSIGN_MESSAGE_RETENTION_DAYS", 30)
        guard retention <= 3650 else {
            throw ValidationError("\(env.source("COUNTERSIGN_MESSAGE_RETENTION_DAYS")) takes 1 to 3650 days")
        }
        config.messageRetention = TimeInterval(retention * 86_400)
        let delayAfter = try number("COUNTERSIGN_LOCKOUT_DELAY_AFTER", config.lockout.delayAfter)
        let lockAfter = try number("COUNTERSIGN_LOCKOUT_LOCK_AFTER", config.lockout.lockAfter)
        guard lockAfter >= delayAfter else {
            throw ValidationError(
                "\(env.source("COUNTERSIGN_LOCKOUT_LOCK_AFTER")) must be at least \(env.source("COUNTERSIGN_LOCKOUT_DELAY_AFTER"))"
            )
        }
        config.lockout = LockoutPolicy(
            delayAfter: delayAfter,
            delay: TimeInterval(try number("COUNTERSIGN_LOCKOUT_DELAY_MINUTES", 30) * 60),
            lockAfter: lockAfter
        )
        let level = env["COUNTERSIGN_LOG_LEVEL"] ?? "info"
        guard let logLevel = Logger.Level(rawValue: level) else {
            throw ValidationError(
                "\(env.source("COUNTERSIGN_LOG_LEVEL")) must be trace, debug, info, notice, warning, error or critical (not \(level))"
            )
        }
        switch logFormat ?? env["COUNTERSIGN_LOG_FORMAT"] ?? "text" {
        case "text": break
        // Once per process, before any logger exists: the libraries' loggers (Hummingbird, Fluent) are JSON too.
        case "json": LoggingSystem.bootstrap(JSONLogHandler.init)
        case let other:
            throw ValidationError(
                "--log-format (or \(env.source("COUNTERSIGN_LOG_FORMAT"))) takes text or json, not \(other)"
            )
        }
        var logger = Logger(label: "countersign")
        logger.logLevel = logLevel
        if let metricsTokenMade { logger.notice("\(metricsTokenMade)") }
        let db = config.database
        let publicURL = config.publicURL
        if environment["COUNTERSIGN_EXIT_WITH_PARENT"] == "1" { Self.exitWithParent() }
        Self.raiseFileLimit()
        do {
            try await serve(config, logger: logger, db: db, publicURL: publicURL)
        } catch let e as OIDCClientError {
            // Only the configuration file's clients are applied here (admin commands say their own).
            throw ValidationError(
                "oidc-clients in \(self.config ?? environment["COUNTERSIGN_CONFIG"] ?? "the configuration file"): \(e)"
            )
        }
    }

    private func serve(
        _ config: ServerConfiguration,
        logger: Logger,
        db: DatabaseLocation,
        publicURL: String?
    )
        async throws
    {
        try await CountersignServer.run(config: config, logger: logger) { url in
            // Unbuffered: whoever started the server (a script, a test) reads this line at once.
            FileHandle.standardOutput.write(Data("countersign listening on \(url) (database \(db))\n".utf8))
            // Browsers treat localhost, unlike 127.0.0.1, as a secure context by name (WebCrypto, passkeys).
            let web = publicURL ?? url.replacingOccurrences(of: "//127.0.0.1:", with: "//localhost:")
            FileHandle.standardOutput.write(Data("web client: \(web)/\n".utf8))
        }
    }
}

extension Serve {
    /// Every push connection holds a file descriptor: take the whole hard limit (the soft default, often
    /// 1024, would refuse connections long before memory runs out).
    static func raiseFileLimit() {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_CONSTANT, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(RLIMIT_NOFILE_CONSTANT, &limit)
    }

    /// For tests and supervisors that start the server as a child: when the parent dies (a crashed test
    /// runner), the server is re-parented and shuts down as on SIGTERM instead of living on.
    static func exitWithParent() {
        let parent = getppid()
        Thread.detachNewThread {
            while getppid() == parent { Thread.sleep(forTimeInterval: 0.5) }
            kill(getpid(), SIGTERM)
        }
    }
}

#if canImport(Glibc)
private let RLIMIT_NOFILE_CONSTANT = Int32(RLIMIT_NOFILE.rawValue)
#else
private let RLIMIT_NOFILE_CONSTANT = RLIMIT_NOFILE
#endif
