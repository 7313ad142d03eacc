import CountersignClient
import CountersignCrypto
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The directory store on real files: private modes, clear errors on damaged files, and the lock.
@Suite struct ConfigDirectoryTests {
    @Test func pinsAreWrittenPrivatelyAndReadBack() throws {
        let config = ConfigDirectory(try Fixture.temporaryDirectory().appendingPathComponent("nested/config"))
        var book = try ContactBook(store: config)
        let bob = Fixture.directory("bob", deviceID: "b1", keys: [.generate()], at: [Fixture.t0])
        book.pin(
            "bob",
            try KeyPins.devices(of: bob, ownUsername: "alice", ownDeviceID: nil, ownKeyID: nil),
            now: Fixture.t0
        )
        try book.save()
        #expect(Self.mode(config.url.path) == 0o700 && Self.mode(config.contactsURL.path) == 0o600)
        #expect(Self.mode(config.lockURL.path) == 0o600)
        #expect(try config.loadPins().contacts["bob"] == book.contacts["bob"])
        let names = try FileManager.default.contentsOfDirectory(atPath: config.url.path)
        #expect(Set(names) == ["contacts.json", "lock"], "no temporary left: \(names)")
    }

    @Test func aTruncatedOrTamperedPinFileIsAClearError() throws {
        let config = ConfigDirectory(try Fixture.temporaryDirectory())
        var book = try ContactBook(store: config)
        let bob = Fixture.directory("bob", deviceID: "b1", keys: [.generate()], at: [Fixture.t0])
        book.pin(
            "bob",
            try KeyPins.devices(of: bob, ownUsername: "alice", ownDeviceID: nil, ownKeyID: nil),
            now: Fixture.t0
        )
        try book.save()
        let whole = try Data(contentsOf: config.contactsURL)
        for bad in [whole.prefix(whole.count / 2), Data(), Data("{\"contacts\": 7}".utf8), Data([0xff, 0xfe])] {
            try bad.write(to: config.contactsURL)
            do {
                _ = try config.loadPins()
                Issue.record("damaged pins were read")
            } catch let e as LocalStoreError {
                guard case .damaged(let path, _) = e else {
                    Issue.record("\(e)")
                    continue
                }
                #expect(path == config.contactsURL.path)
                #expect(
                    "\(e)".hasPrefix("\(config.contactsURL.path) is damaged (")
                        && "\(e)".hasSuffix("move it away to start over")
                )
            }
            // A damaged file is never replaced by an update: the pins it held are not silently dropped.
            #expect(throws: LocalStoreError.self) { try config.updatePins { $0 = KeyPins() } }
            #expect(try Data(contentsOf: config.contactsURL) == bad)
        }
        // A directory where the file should be: a read error naming it, not "no pins".
        try FileManager.default.removeItem(at: config.contactsURL)
        try FileManager.default.createDirectory(at: config.contactsURL, withIntermediateDirectories: false)
        #expect(throws: LocalStoreError.self) { try config.loadPins() }
    }

    @Test func anUpdateWaitsForTheLockAndGivesUpWithAClearError() throws {
        let url = try Fixture.temporaryDirectory()
        var config = ConfigDirectory(url)
        config.lockTimeout = .milliseconds(300)
        let waiting = config
        // Held through another descriptor (as another process would hold it).
        let fd = open(config.lockURL.path, O_RDWR | O_CREAT, 0o600)
        try #require(fd >= 0 && flock(fd, LOCK_EX) == 0)
        let start = ContinuousClock.now
        do {
            try waiting.updatePins { _ in }
            Issue.record("the update ran while another held the lock")
        } catch let e as LocalStoreError {
            #expect(e == .busy(lock: config.lockURL.path, seconds: 0))
            #expect("\(e)".contains("another countersign run has held \(config.lockURL.path)"))
        }
        #expect(ContinuousClock.now - start >= .milliseconds(300))
        #expect(!FileManager.default.fileExists(atPath: config.contactsURL.path), "nothing written")
        // Released: the update runs.
        flock(fd, LOCK_UN)
        close(fd)
        try waiting.updatePins { $0.pin("bob", [], now: Fixture.t0) }
        #expect(try config.loadPins().contacts["bob"] != nil)
    }

    @Test func concurrentUpdatesThroughSeparateDescriptorsLoseNothing() async throws {
        let config = ConfigDirectory(try Fixture.temporaryDirectory())
        let names = (0..<16).map { "user\($0)" }
        await withTaskGroup(of: Void.self) { group in
            for name in names {
                group.addTask {
                    try? config.updatePins { pins in
                        usleep(2_000)  // widen the window between read and write
                        pins.pin(name, [], now: Fixture.t0)
                    }
                }
            }
        }
        #expect(Set(try config.loadPins().contacts.keys) == Set(names))
    }

    static func mode(_ path: String) -> mode_t {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o777 : 0
    }
}
