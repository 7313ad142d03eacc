import CountersignClient
import CountersignCrypto
import Foundation
import Testing

/// `DeviceState`'s rotation and revocation steps, `Keyring` finding current and rotated keys, and both
/// kept by the directory store in the files the CLI has always written.
@Suite struct DeviceStateTests {
    static let device = DeviceState(
        server: "https://cs.example",
        username: "alice",
        deviceId: "dev-1",
        name: "laptop",
        keyFile: "keys/00112233445566778899aabbccddeeff.key",
        createdAt: Fixture.t0
    )

    @Test func aRotationIsPendingUntilTheServerTookItAndKeepsTheOldKey() {
        let d = Self.device
        #expect(d.keyID == "00112233445566778899aabbccddeeff")
        let pending = d.beginningRotation(to: "keys/new.key")
        #expect(pending.keyFile == d.keyFile && pending.sessionKeyFiles == [d.keyFile, "keys/new.key"])
        #expect(pending.keyFiles == [d.keyFile], "a pending key is not yet one this device signed with")
        #expect(pending.abandoningRotation() == d)
        let done = pending.finishingRotation(to: "keys/new.key")
        #expect(done.keyFile == "keys/new.key" && done.oldKeyFiles == [d.keyFile] && done.pendingKeyFile == nil)
        #expect(done.keyFiles == ["keys/new.key", d.keyFile] && done.keyID == "new")
        let revoked = done.markedRevoked(now: Fixture.t0 + 10)
        #expect(revoked.markedRevoked(now: Fixture.t0 + 99).revokedAt == Fixture.t0 + 10, "first found, kept")
    }

    @Test func aDeviceSessionIsUsableOnlyByItsDeviceUntilItExpires() {
        let s = StoredDeviceSession(deviceId: "dev-1", token: "csd_x", expiresAt: Fixture.t0 + 60)
        #expect(s.isUsable(by: Self.device, now: Fixture.t0))
        #expect(!s.isUsable(by: Self.device, now: Fixture.t0 + 60))
        var other = Self.device
        other.deviceId = "dev-2"
        #expect(!s.isUsable(by: other, now: Fixture.t0))
    }

    @Test func theKeyringFindsTheCurrentOrARotatedKeyAndNeverOverwritesOne() throws {
        let config = ConfigDirectory(try Fixture.temporaryDirectory())
        let keyring = Keyring(store: config)
        let old = Identity.generate()
        let new = Identity.generate()
        let stranger = Identity.generate()
        let oldFile = try keyring.store(old, passphrase: Array("pass".utf8))
        let newFile = try keyring.store(new, passphrase: nil)
        #expect(oldFile == "keys/\(Fixture.id(old.publicKey)).key")
        #expect(ConfigDirectoryTests.mode(config.url.appendingPathComponent(oldFile).path) == 0o600)
        #expect(ConfigDirectoryTests.mode(config.keysDirectory.path) == 0o700)
        // An envelope sealed to a stranger and to the rotated-away key opens with the rotated key.
        let found = keyring.keyFilePath(forAnyOf: [stranger.publicKey.fingerprint, old.publicKey.fingerprint])
        #expect(found == config.url.appendingPathComponent(oldFile).path)
        #expect(keyring.keyFilePath(for: new.publicKey.fingerprint) == config.url.appendingPathComponent(newFile).path)
        #expect(keyring.keyFilePath(forAnyOf: [stranger.publicKey.fingerprint]) == nil)
        // The same key again: refused, the file as it was.
        let before = try Data(contentsOf: config.url.appendingPathComponent(oldFile))
        #expect(
            throws: LocalStoreError.cannotCreate(path: config.url.appendingPathComponent(oldFile).path, errno: EEXIST)
        ) {
            try keyring.store(old, passphrase: nil)
        }
        #expect(try Data(contentsOf: config.url.appendingPathComponent(oldFile)) == before)
        // Only a key ID names a file.
        #expect(config.keyFilePath(keyID: "../device") == nil)
    }

    @Test func theDirectoryStoreReadsTheFilesEarlierVersionsWrote() throws {
        let config = ConfigDirectory(try Fixture.temporaryDirectory())
        // device.json as the CLI wrote it before the move (Foundation escapes slashes), written back byte
        // for byte but for the date, which now keeps milliseconds (WireDate: pins' retirement times need
        // them).
        let deviceJSON = """
            {
              "createdAt" : "2027-01-15T08:00:00Z",
              "deviceId" : "dev-1",
              "keyFile" : "keys\\/00112233445566778899aabbccddeeff.key",
              "name" : "laptop",
              "oldKeyFiles" : [
                "keys\\/ffeeddccbbaa99887766554433221100.key"
              ],
              "server" : "https:\\/\\/cs.example",
              "username" : "alice"
            }
            """
        try Data(deviceJSON.utf8).write(to: config.deviceURL)
        let device = try #require(try config.loadDevice())
        #expect(device.oldKeyFiles == ["keys/ffeeddccbbaa99887766554433221100.key"] && device.pendingKeyFile == nil)
        try config.saveDevice(device)
        #expect(
            String(decoding: try Data(contentsOf: config.deviceURL), as: UTF8.self)
                == deviceJSON.replacingOccurrences(of: "08:00:00Z", with: "08:00:00.000Z")
        )
        #expect(ConfigDirectoryTests.mode(config.deviceURL.path) == 0o600)
        try config.saveDeviceSession(StoredDeviceSession(deviceId: "dev-1", token: "csd_x", expiresAt: Fixture.t0))
        #expect(try config.loadDeviceSession()?.token == "csd_x")
        config.removeDeviceSession()
        #expect(try config.loadDeviceSession() == nil)
    }

    @Test func aTruncatedDeviceFileIsAClearErrorNamingIt() throws {
        let config = ConfigDirectory(try Fixture.temporaryDirectory())
        try config.saveDevice(Self.device)
        let whole = try Data(contentsOf: config.deviceURL)
        for cut in [1, whole.count / 3, whole.count - 2] {
            try whole.prefix(cut).write(to: config.deviceURL)
            #expect {
                try config.loadDevice()
            } throws: { error in
                guard case LocalStoreError.damaged(let path, _) = error else { return false }
                return path == config.deviceURL.path
                    && "\(error)".hasSuffix(
                        "is damaged (\((error as! LocalStoreError).reason)); move it away to start over"
                    )
            }
        }
    }
}

extension LocalStoreError {
    var reason: String {
        if case .damaged(_, let reason) = self { return reason }
        return ""
    }
}
