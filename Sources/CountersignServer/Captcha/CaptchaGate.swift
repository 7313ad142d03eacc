import Foundation

/// The captcha's rules (ALTCHA proof of work): challenges signed by the server, each solution accepted
/// once before it expires. Registration asks always (unless off), password checks by the policy
/// (`ServerConfiguration.captcha`). Clock and randomness are injected.
struct CaptchaGate: Sendable {
    let altcha: Altcha
    let store: any CaptchaStore
    let clock: any WallClock
    let random: any RandomSource

    init(store: any CaptchaStore, maxNumber: Int, clock: any WallClock, random: any RandomSource) async throws {
        let key = try await store.serverSecret(name: "altcha-hmac-key") { random.bytes(32) }
        altcha = Altcha(key: key, maxNumber: maxNumber)
        self.store = store
        self.clock = clock
        self.random = random
    }

    func challenge() -> Altcha.Challenge {
        var rng = RandomSourceGenerator(source: random)
        return altcha.challenge(now: clock.now(), using: &rng)
    }

    /// Checks and spends a solution when `required`.
    func check(_ payload: String?, required: Bool) async throws {
        guard required else { return }
        guard let payload, !payload.isEmpty else { throw CaptchaError.required }
        let (challenge, expires): (String, Date)
        do {
            (challenge, expires) = try altcha.verify(payload, now: clock.now())
        } catch let e as Altcha.Failure {
            switch e {
            case .malformed:
                throw CaptchaError.invalid("the captcha solution is not base64 JSON of an ALTCHA SHA-256 solution")
            case .badSignature: throw CaptchaError.invalid("the captcha challenge was not issued by this server")
            case .wrongAnswer: throw CaptchaError.invalid("the captcha number does not solve the challenge")
            case .expired: throw CaptchaError.invalid("the captcha challenge expired")
            }
        }
        guard try await store.spendCaptcha(challenge: challenge, expiresAt: expires) else {
            throw CaptchaError.invalid("the captcha solution was already used")
        }
    }
}
