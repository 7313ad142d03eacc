import CountersignCrypto
import Foundation
import Logging

/// cryptology-project's demo accounts (its `user1`…`userN`, all with the password `1234`), made the safe way:
/// each gets its own strong random password, shown once to the operator who asked and stored only as its
/// Argon2id hash. Refused on a database that already has accounts unless forced, so a slip of the
/// database URL cannot add known-name accounts to a server people use.
extension CountersignServer {
    public struct DemoUser: Sendable, Equatable {
        public let username: String
        public let password: String
    }

    /// 1 to 1,000 accounts: each costs one password hash.
    public static let demoUserLimit = 1000

    /// A demo password: 20 characters of the human-code alphabet (31 symbols, about 99 bits) in groups of 5.
    static func demoPassword(random: any RandomSource) -> String {
        let text = HumanCode.generate(length: 20, random: random)
        return stride(from: 0, to: 20, by: 5).map { i in
            String(text.dropFirst(i).prefix(5))
        }.joined(separator: "-")
    }

    /// Makes `user1`…`userN`, handing each new account and its password to `created` as soon as it is stored
    /// (so that a failure part way loses no password already set); returns the usernames that existed
    /// already, left as they are (only with `force`).
    public static func demoUsers(
        count: Int,
        force: Bool,
        database location: DatabaseLocation,
        hasher: PasswordHasher = .owasp,
        random: any RandomSource = SystemRandomSource(),
        logger: Logger,
        created: (DemoUser) -> Void
    ) async throws -> [String] {
        guard (1...demoUserLimit).contains(count) else {
            throw ConfigurationError("the number of demo users must be 1 to \(demoUserLimit); \(count) was given")
        }
        let storage = try await ServerDatabase.open(location, logger: logger)
        do {
            let some = try await storage.usernames(limit: 4)
            if !some.isEmpty, !force {
                throw ConfigurationError(
                    """
                    \(location) already has accounts (\(some.prefix(3).joined(separator: ", "))\(some.count > 3 ? ", …" : "")); \
                    nothing was created. Demo users are for a new, empty database; add --force to add them to this one anyway
                    """
                )
            }
            var config = ServerConfiguration()
            config.hasher = hasher
            let service = try await ServerServices.assemble(
                storage: storage,
                config: config,
                clock: SystemClock(),
                random: random,
                logger: logger
            ).accounts
            var existing: [String] = []
            let origin = RequestOrigin(address: "", userAgent: "countersign-server admin demo-users")
            for n in 1...count {
                let username = "user\(n)"
                let password = demoPassword(random: random)
                do {
                    _ = try await service.createAccountAsOperator(
                        username: username,
                        password: password,
                        name: "User",
                        lastname: "\(n)",
                        origin: origin
                    )
                    created(DemoUser(username: username, password: password))
                } catch AccountError.usernameTaken {
                    existing.append(username)
                }
            }
            await storage.close()
            return existing
        } catch {
            await storage.close()
            throw error
        }
    }
}
