import Crypto
import Foundation
import Logging
import Testing

@testable import CountersignServer

/// What the server's objects say of themselves reaches the log (ServiceLifecycle describes every service at debug
/// level, the purge service holding the whole configuration): no secret may be in it.
@Suite(.closesStorage) struct ConfigurationDescriptionTests {
    @Test func theConfigurationAndThePurgeServiceDescribeNoSecret() async throws {
        let h = try await Harness.make(.sqlite)
        let key = P256.Signing.PrivateKey()
        var config = ServerConfiguration()
        config.metricsToken = "metrics-token-SECRET-1234567890"
        config.database = try DatabaseLocation(parsing: "postgres://countersign:db-PASSWORD@db.internal:5432/cs")
        config.apns = try APNsSettings(
            keyPEM: key.pemRepresentation,
            keyID: "ABCDE12345",
            teamID: "TEAM123456",
            topic: "com.example.app"
        )
        let purge = PurgeService(
            storage: h.storage,
            clock: h.clock,
            config: config,
            logger: Logger(label: "test")
        )
        let scalar = Data(key.rawRepresentation).base64EncodedString()
        for text in [
            String(describing: config), String(reflecting: config), String(describing: purge),
            String(reflecting: purge), String(describing: [purge]),
        ] {
            #expect(!text.contains("SECRET") && !text.contains("PASSWORD"), "\(text)")
            #expect(!text.contains(scalar) && !text.contains("PRIVATE KEY"), "\(text)")
        }
        #expect(String(describing: config).contains("db.internal"))
        await h.close()
    }
}
