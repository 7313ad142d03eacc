import CountersignAPI
import CountersignCrypto
import Dispatch
import Foundation

/// The server's parsers of untrusted text that need only CountersignAPI, CountersignCrypto and jwt-kit:
/// Altcha.swift and ChallengeSigner.swift, symlinked into this target from Sources/CountersignServer.
enum FuzzServer {
    /// The HMAC key Fuzz/seeds.py signs its ALTCHA seeds with, and the time they are checked at (their
    /// salts expire at 2000000000, in 2033).
    static let captcha = Altcha(key: Array("countersign fuzz altcha key".utf8))
    static let altchaNow = Date(timeIntervalSince1970: 1_800_000_000)

    /// The base64 `captcha` field of a sign-in or registration, and the salt's `expires` parameter.
    static func altcha(_ data: [UInt8]) {
        let text = FuzzKeys.text(data)
        _ = try? captcha.verify(text, now: altchaNow)
        _ = Altcha.expires(in: text)
    }

    /// The server's challenge signer: the fixed signer's key, so that seeds signed with it verify.
    static let challengeSigner = blocking {
        try! await ChallengeSigner(privateScalar: (1...32).map { UInt8($0) })
    }

    /// Authenticators' ES256 answers (verified under the device's signing key) and the server's own
    /// challenges (as an authenticator checks them), both by FuzzKeys.signer's key.
    static func deviceJWT(_ data: [UInt8]) {
        let token = FuzzKeys.text(data)
        let spki = FuzzKeys.signer.publicKey.spkiDER
        let signer = challengeSigner
        _ = blocking { await ChallengeSigner.verifyAnswer(token, signingKey: spki) }
        _ = blocking { await signer.verifyChallenge(token) }
    }

    /// Runs async work to its end from libFuzzer's synchronous callback.
    static func blocking<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let result = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            result.value = await work()
            done.signal()
        }
        done.wait()
        return result.value!
    }
}

/// Written by one task, read after the semaphore that task signals.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
