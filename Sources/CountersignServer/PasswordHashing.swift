import CountersignCrypto
import Foundation
import Synchronization

/// Argon2id off the event loops: ~15 ms of CPU and 19 MiB a check, on threads of its own
/// (`HashThreads`). Past `maxQueuedHashes` waiting checks the server answers 503 at once instead of
/// letting the queue (and every lockout reservation's age) grow. Accounts (registration, password change)
/// and sign-in share one.
final class PasswordHashing: Sendable {
    let hasher: PasswordHasher
    let maxQueued: Int
    let random: any RandomSource
    /// A hash of a random password with the current parameters: unknown usernames are checked against
    /// it so that they cost the same time as real ones.
    let dummyHash: String
    private let queued = Mutex(0)

    init(hasher: PasswordHasher, maxQueued: Int, random: any RandomSource) throws {
        self.hasher = hasher
        self.maxQueued = maxQueued
        self.random = random
        var rng = RandomSourceGenerator(source: random)
        dummyHash = try hasher.hash(random.bytes(16), using: &rng)
    }

    private func onHashQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let admitted = queued.withLock { n -> Bool in
            guard n < maxQueued else { return false }
            n += 1
            return true
        }
        guard admitted else { throw RequestError.serverBusy }
        defer { queued.withLock { $0 -= 1 } }
        return try await HashThreads.run(work)
    }

    func hash(_ password: String) async throws -> String {
        let hasher = self.hasher
        let random = self.random
        return try await onHashQueue {
            var rng = RandomSourceGenerator(source: random)
            return try hasher.hash(Array(password.utf8), using: &rng)
        }
    }

    func verify(_ password: String, _ phc: String) async throws -> Bool {
        try await onHashQueue { try PasswordHasher.verify(Array(password.utf8), against: phc) }
    }
}
