import AsyncHTTPClient
@_exported import CountersignAPI
import Foundation
import NIOCore
import NIOHTTP1

/// The Swift SDK for a Countersign server: accounts, sessions, re-authentication, settings, audit.
/// Signing in and registering solve the server's captcha when it asks for one.
public final class CountersignClient: @unchecked Sendable {
    public let server: URL
    /// The bearer token of the current account session, if signed in.
    public private(set) var token: String?
    /// The bearer token of the current device session (messages, key rotation), if one is open.
    public internal(set) var deviceToken: String?
    let userAgent: String
    /// Deadlines and the size cap of calls that set none of their own (long polls and message pages do).
    public let limits: RequestLimits

    public init(
        server: URL,
        token: String? = nil,
        deviceToken: String? = nil,
        userAgent: String = CountersignClient.defaultUserAgent,
        limits: RequestLimits = .interactive
    ) {
        self.server = server
        self.token = token
        self.deviceToken = deviceToken
        self.userAgent = userAgent
        self.limits = limits
    }

    // MARK: Accounts and sessions

    @discardableResult
    public func register(username: String, password: String, name: String, lastname: String) async throws -> Account {
        try await withCaptcha { captcha in
            let body = RegisterRequest(
                username: username,
                password: password,
                name: name,
                lastname: lastname,
                captcha: captcha
            )
            return try await self.send("POST", "/v1/accounts", body: body, as: Account.self)
        }
    }

    /// Signs in and keeps the token for later calls.
    @discardableResult
    /// Throws `ClientError.secondFactorRequired` when the account has a second factor: finish it with
    /// `mfaTransaction`, `submitPasscode` or `submitRecoveryCode`, then `completeSignIn`. `offerPush:
    /// false` when the second factor will be a code: no push goes to the authenticators (nor counts).
    public func signIn(username: String, password: String, offerPush: Bool = true) async throws -> SignedInSession {
        let answer = try await withCaptcha { captcha in
            let body = SignInRequest(
                username: username,
                password: password,
                captcha: captcha,
                secondFactor: offerPush ? nil : "code"
            )
            return try await self.send("POST", "/v1/sessions", body: body, as: SignInAnswer.self)
        }
        switch answer {
        case .session(let s):
            token = s.token
            return s
        case .secondFactor(let pending):
            throw ClientError.secondFactorRequired(pending)
        }
    }

    /// `POST /v1/sessions` answers a session (201) or a pending second factor (202).
    enum SignInAnswer: Decodable {
        case session(SignedInSession)
        case secondFactor(MFARequired)
        init(from decoder: any Decoder) throws {
            if let pending = try? MFARequired(from: decoder) {
                self = .secondFactor(pending)
            } else {
                self = .session(try SignedInSession(from: decoder))
            }
        }
    }

    /// Keeps a session obtained another way (a completed second factor, an authentication code).
    func adopt(_ s: SignedInSession) -> SignedInSession {
        token = s.token
        return s
    }

    public func signOut() async throws {
        try await send("DELETE", "/v1/sessions/current", credential: .account)
        token = nil
    }

    public func me() async throws -> Account {
        try await send("GET", "/v1/me", as: Account.self, credential: .account)
    }

    public func changePassword(current: String, new: String) async throws {
        let body = PasswordChangeRequest(currentPassword: current, newPassword: new)
        try await send("PUT", "/v1/me/password", body: body, credential: .account)
    }

    /// Throws `ClientError.secondFactorRequired` when the account has a second factor: the password alone
    /// re-authenticates nothing; finish the transaction as a sign-in's (push, `submitPasscode`,
    /// `submitRecoveryCode`), then `completeReauthentication`. `offerPush` as in `signIn`.
    public func reauthenticate(password: String, offerPush: Bool = true) async throws {
        let answer = try await withCaptcha { captcha in
            try await send(
                "POST",
                "/v1/sessions/current/reauth",
                body: ReauthRequest(password: password, captcha: captcha, secondFactor: offerPush ? nil : "code"),
                as: MaybeBody<MFARequired>.self,
                credential: .account
            )
        }
        if let pending = answer.value { throw ClientError.secondFactorRequired(pending) }
    }

    @discardableResult
    public func updateSettings(_ settings: AccountSettings) async throws -> AccountSettings {
        try await send("PUT", "/v1/me/settings", body: settings, as: AccountSettings.self, credential: .account)
    }

    /// One page of the audit log, newest first; pass the previous page's `next` to continue.
    public func audit(limit: Int = 50, next: String? = nil) async throws -> AuditPage {
        try await send("GET", next ?? "/v1/me/audit?limit=\(limit)", as: AuditPage.self, credential: .account)
    }

    public func captcha() async throws -> CaptchaChallenge {
        try await send("GET", "/v1/captcha", as: CaptchaChallenge.self)
    }

    // MARK: Plumbing

    /// Tries without a captcha; when the server asks for one, solves a fresh challenge and retries once.
    private func withCaptcha<T>(_ call: (String?) async throws -> T) async throws -> T {
        do {
            return try await call(nil)
        } catch ClientError.problem(let p) where p.kind == .captchaRequired {
            let challenge = try await captcha()
            let solution = try await Task.detached(priority: .userInitiated) { CaptchaSolver.solve(challenge) }.value
            guard let solution else { throw ClientError.captchaUnsolvable }
            return try await call(solution)
        }
    }

    struct Empty: Decodable {}

    /// A body that is absent (204) or present (202).
    struct MaybeBody<Wrapped: Decodable>: Decodable, AbsentBody {
        var value: Wrapped?
        init() { value = nil }
        init(from decoder: any Decoder) throws { value = try Wrapped(from: decoder) }
    }
    static let noBody: [String: String]? = nil

    /// Which token a call carries.
    enum Credential {
        case none, account, device
        case bearer(String)
    }

    /// A call with no body, its answer read as `T`.
    func send<T: Decodable>(
        _ method: String,
        _ path: String,
        as: T.Type,
        credential: Credential = .none,
        limits: RequestLimits? = nil
    ) async throws -> T {
        try await send(method, path, body: Self.noBody, as: T.self, credential: credential, limits: limits)
    }

    /// A GET that the server holds up to `wait` seconds (1 to 30; 0 answers at once) until there is
    /// something new, with deadlines that allow for the wait (`RequestLimits.longPoll` unless `limits`).
    func longPoll<T: Decodable>(
        _ path: String,
        wait: Int,
        as: T.Type,
        credential: Credential,
        limits: RequestLimits? = nil
    ) async throws -> T {
        let query = wait > 0 ? (path.contains("?") ? "&" : "?") + "wait=\(wait)" : ""
        return try await send(
            "GET",
            path + query,
            as: T.self,
            credential: credential,
            limits: limits ?? .longPoll(wait: wait)
        )
    }

    /// A call whose answer has nothing to read (204).
    func send<B: Encodable>(_ method: String, _ path: String, body: B?, credential: Credential = .none) async throws {
        _ = try await send(method, path, body: body, as: Empty.self, credential: credential)
    }

    /// A call with no body whose answer has nothing to read (204).
    func send(_ method: String, _ path: String, credential: Credential = .none) async throws {
        _ = try await send(method, path, body: Self.noBody, as: Empty.self, credential: credential)
    }

    /// Every call goes through here: `body` as JSON, `credential` as the bearer token, the answer read as
    /// `T` (`Empty` reads nothing; an `AbsentBody` type takes an empty body), a problem thrown as
    /// `ClientError.problem`.
    func send<B: Encodable, T: Decodable>(
        _ method: String,
        _ path: String,
        body: B?,
        as: T.Type,
        credential: Credential = .none,
        limits: RequestLimits? = nil
    ) async throws -> T {
        guard let url = URL(string: path, relativeTo: server) else {
            throw ClientError.unexpectedResponse(status: 0, detail: "bad path \(path)")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "User-Agent", value: userAgent)
        request.headers.add(name: "Accept", value: "application/json")
        switch credential {
        case .none: break
        case .account:
            guard let token else { throw ClientError.notSignedIn }
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
        case .device:
            guard let deviceToken else { throw ClientError.noDeviceSession }
            request.headers.add(name: "Authorization", value: "Bearer \(deviceToken)")
        case .bearer(let secret):
            request.headers.add(name: "Authorization", value: "Bearer \(secret)")
        }
        if let body {
            request.body = .bytes(ByteBuffer(bytes: try APICoding.encoder().encode(body)))
            request.headers.add(name: "Content-Type", value: "application/json")
        }
        let response = try await HTTPTransport.exchange(request, limits: limits ?? self.limits, server: server)
        let data = Data(response.body)
        if (300..<400).contains(response.status) {
            throw ClientError.redirected(status: response.status, location: response.location ?? "")
        }
        let decoder = APICoding.decoder()
        guard (200..<300).contains(response.status) else {
            if let problem = try? decoder.decode(ProblemDetails.self, from: data) { throw ClientError.problem(problem) }
            throw ClientError.unexpectedResponse(
                status: response.status,
                detail: String(decoding: data.prefix(200), as: UTF8.self)
            )
        }
        if T.self == Empty.self { return Empty() as! T }
        if data.isEmpty, let absent = T.self as? any AbsentBody.Type { return absent.init() as! T }
        do {
            return try decoder.decode(T.self, from: data)
        } catch {
            throw ClientError.unexpectedResponse(
                status: response.status,
                detail: "the body does not match the API: \(error)"
            )
        }
    }
}

/// A response type that an empty body (204) decodes to.
protocol AbsentBody { init() }
