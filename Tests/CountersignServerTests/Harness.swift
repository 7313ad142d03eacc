import CountersignCrypto
import CountersignTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing

@testable import CountersignServer

/// The databases every integration test runs against: a fresh SQLite file, and a fresh database on the
/// PostgreSQL that scripts/test.sh starts (COUNTERSIGN_TEST_POSTGRES_URL).
enum Backend: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite, postgres
    var description: String { rawValue }

    static var postgresAdminURL: String? { ProcessInfo.processInfo.environment["COUNTERSIGN_TEST_POSTGRES_URL"] }
    static var available: [Backend] { postgresAdminURL == nil ? [.sqlite] : [.sqlite, .postgres] }

    /// A new, empty database of this kind.
    func freshLocation() throws -> DatabaseLocation {
        switch self {
        case .sqlite:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cs-server-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            return .sqlite(path: dir.appendingPathComponent("test.sqlite").path)
        case .postgres:
            let admin = Backend.postgresAdminURL!
            let name = "cs_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
            let status = try Spawned("/usr/bin/env", ["psql", admin, "-q", "-c", "CREATE DATABASE \(name)"]).wait()
            guard status == 0 else { throw ConfigurationError("psql could not create \(name)") }
            var c = URLComponents(string: admin)!
            c.path = "/\(name)"
            return .postgres(url: c.string!)
        }
    }
}

/// A server over a real database with a manual clock, driven in-process through Hummingbird's test client.
struct Harness: Sendable {
    let clock: ManualClock
    let config: ServerConfiguration
    let storage: any ServerStorage
    let services: ServerServices
    /// Told of every session ending, as the push channel is.
    let endings: EndingTap
    var service: AccountService { services.accounts }
    var signIn: SignInService { services.signIn }
    /// The storage, as the account service's store (the same value).
    var store: any ServerStorage { storage }

    /// A cheap Argon2id for tests that hash often; the OWASP default is measured by the benchmark.
    static let testHasher = PasswordHasher(memoryKiB: 1024, iterations: 1, parallelism: 1)

    static func make(
        _ backend: Backend,
        location: DatabaseLocation? = nil,
        clock: ManualClock = ManualClock(),
        configure: (inout ServerConfiguration) -> Void = { _ in },
        wrapStore: (any ServerStorage) -> any SignInStore = { $0 },
        backChannel: BackChannelLogout.Deliver? = nil,
        pushTransport: WebPushSender.Transport? = nil,
        pushResolver: WebPushSender.Resolver? = nil,
        apnsTransport: APNsSender.Transport? = nil
    ) async throws -> Harness {
        var config = ServerConfiguration()
        config.captcha = .off
        config.captchaMaxNumber = 2_000
        config.hasher = testHasher
        configure(&config)
        config.database = try location ?? backend.freshLocation()
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let storage = try await OpenedStorages.open(config.database, logger: logger)
        let endings = EndingTap()
        let services = try await ServerServices.assemble(
            storage: storage,
            config: config,
            clock: clock,
            random: SystemRandomSource(),
            logger: logger,
            signInStore: wrapStore(storage),
            alsoTell: { endings.tell($0) },
            backChannelDeliver: backChannel,
            pushTransport: pushTransport,
            pushResolver: pushResolver,
            apnsTransport: apnsTransport
        )
        OpenedStorages.track(services.background)
        return Harness(clock: clock, config: config, storage: storage, services: services, endings: endings)
    }

    /// The router over this harness's services.
    func router() throws -> Router<AppContext> {
        try CountersignServer.buildRouter(services, config: config, clock: clock)
    }

    func run(_ test: @Sendable (API) async throws -> Void) async throws {
        let app = Application(router: try router())
        do {
            try await app.test(.router) { client in try await test(API(client: client)) }
        } catch {
            await close()
            throw error
        }
        await close()
    }

    /// Waits for (or cancels) what requests left running, then closes the storage.
    func close() async {
        await services.background.drain()
        await storage.close()
    }
}

/// Session endings as the push channel hears them, for tests to observe.
final class EndingTap: Sendable {
    private let observers = Mutex<[@Sendable (SessionEnding) -> Void]>([])

    func observe(_ observer: @escaping @Sendable (SessionEnding) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    func tell(_ ending: SessionEnding) {
        for observer in observers.withLock({ $0 }) { observer(ending) }
    }
}

/// The storages one test opened, closed when the test ends however it ends (`.closesStorage`). A storage
/// released unclosed would deinitialise AsyncKit's pools unshut, whose debug assertion aborts the whole
/// test process and hides every other result; so a test that throws halfway fails alone.
final class OpenedStorages: Sendable {
    @TaskLocal static var current: OpenedStorages?

    private let opened = Mutex<[any ServerStorage]>([])
    private let work = Mutex<[BackgroundWork]>([])

    /// What the services over a storage of this test leave running: drained before the storages close.
    static func track(_ background: BackgroundWork) { current?.work.withLock { $0.append(background) } }

    /// Opens the database at `location` and registers it with the running test's scope: a test outside
    /// one is refused rather than risk the abort.
    static func open(_ location: DatabaseLocation, logger: Logger) async throws -> any ServerStorage {
        guard let scope = current else {
            throw ConfigurationError(
                "a test opened a database outside the .closesStorage trait: add it to the suite, @Suite(.closesStorage)"
            )
        }
        let storage = try await ServerDatabase.open(location, logger: logger)
        scope.opened.withLock { $0.append(storage) }
        return storage
    }

    /// Closes what is still open (close is idempotent: tests may have closed some themselves).
    func closeAll() async {
        for w in work.withLock({ $0 }) { await w.drain() }
        let all = opened.withLock { s in
            defer { s = [] }
            return s
        }
        for storage in all { await storage.close() }
    }
}

/// `@Suite(.closesStorage)`: every database a test of the suite opens through `OpenedStorages` is closed
/// after the test, also when it throws.
struct ClosesStorage: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let scope = OpenedStorages()
        do {
            try await OpenedStorages.$current.withValue(scope) { try await function() }
        } catch {
            await scope.closeAll()
            throw error
        }
        await scope.closeAll()
    }
}

extension Trait where Self == ClosesStorage {
    static var closesStorage: Self { ClosesStorage() }
}

/// JSON over the test client.
struct API: Sendable {
    let client: any TestClientProtocol

    struct Reply: Sendable {
        var status: Int
        var headers: HTTPFields
        var body: Data
        var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
        var code: String? { json["code"] as? String }
        var isProblem: Bool {
            headers[.contentType] == "application/problem+json" && json["type"] != nil
                && json["status"] as? Int == status
        }
    }

    func call(
        _ method: HTTPRequest.Method,
        _ path: String,
        json: [String: any Sendable]? = nil,
        raw: Data? = nil,
        token: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> Reply {
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        var body: ByteBuffer?
        if let json {
            body = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))
            if headers[.contentType] == nil { headers[.contentType] = "application/json" }
        } else if let raw {
            body = ByteBuffer(bytes: raw)
        }
        let r = try await client.execute(uri: path, method: method, headers: headers, body: body)
        return Reply(status: Int(r.status.code), headers: r.headers, body: Data(buffer: r.body))
    }

    @discardableResult
    func register(
        _ username: String,
        _ password: String = "correct horse",
        captcha: String? = nil
    ) async throws -> Reply {
        var body: [String: any Sendable] = [
            "username": username, "password": password, "name": "Ada", "lastname": "Lovelace",
        ]
        if let captcha { body["captcha"] = captcha }
        return try await call(.post, "/v1/accounts", json: body)
    }

    func signIn(_ username: String, _ password: String = "correct horse", captcha: String? = nil) async throws -> Reply
    {
        var body: [String: any Sendable] = ["username": username, "password": password]
        if let captcha { body["captcha"] = captcha }
        return try await call(.post, "/v1/sessions", json: body)
    }

    func token(_ username: String, _ password: String = "correct horse") async throws -> String {
        let r = try await signIn(username, password)
        guard r.status == 201, let token = r.json["token"] as? String else {
            throw ConfigurationError("sign-in failed: \(r.status) \(String(decoding: r.body, as: UTF8.self))")
        }
        return token
    }

    /// Fetches a challenge and solves it by brute force (the test configuration keeps maxnumber small).
    func solveCaptcha() async throws -> String {
        let c = try await call(.get, "/v1/captcha").json
        let salt = c["salt"] as! String
        let challenge = c["challenge"] as! String
        let max = c["maxnumber"] as! Int
        for n in 0...max where Altcha.sha256Hex(salt + String(n)) == challenge {
            let solution: [String: any Sendable] = [
                "algorithm": "SHA-256", "challenge": challenge, "number": n, "salt": salt,
                "signature": c["signature"] as! String,
            ]
            return try JSONSerialization.data(withJSONObject: solution).base64EncodedString()
        }
        throw ConfigurationError("unsolvable captcha")
    }
}

@Suite(.closesStorage) struct BackendAvailability {
    /// scripts/test.sh starts PostgreSQL and sets COUNTERSIGN_REQUIRE_POSTGRES=1: then a missing URL is a
    /// failure, not a silently skipped half of the suite.
    @Test func postgresIsThereWhenRequired() {
        if ProcessInfo.processInfo.environment["COUNTERSIGN_REQUIRE_POSTGRES"] == "1" {
            #expect(Backend.available.contains(.postgres), "COUNTERSIGN_TEST_POSTGRES_URL is not set")
        }
    }
}
