import CountersignAPI
import CountersignCrypto
import Foundation
import Testing

@testable import CountersignClient
@testable import CountersignServer

/// Linking (docs/PROTOCOL.md §1): a device of the account vouches for a new one; the server checks the
/// vouch and publishes it on the new key, and a contact who pinned the voucher follows the new device
/// with no warning, while a device nobody pinned vouched for is still refused. On both backends.
@Suite(.closesStorage) struct DeviceLinkTests {
    static func vouch(
        _ voucher: Person,
        for target: Device,
        at seconds: Int64,
        signer: Identity? = nil,
        keyID: String? = nil
    ) throws -> DeviceVouchRequest {
        let message = DeviceProof.vouchMessage(
            username: voucher.username,
            voucherDeviceID: voucher.device.id,
            voucherSigningKey: voucher.identity.publicKey,
            deviceID: target.id,
            signingKey: try PublicKey(spki: target.signingKey.bytes),
            encryptionKey: try PublicKey(spki: target.encryptionKey.bytes),
            vouchedAt: seconds
        )
        return DeviceVouchRequest(
            signingKeyId: keyID ?? target.signingKeyId,
            vouchedAt: seconds,
            signature: Base64URL(try (signer ?? voucher.identity).signature(for: message))
        )
    }

    static func post(_ voucher: Person, _ target: String, _ body: DeviceVouchRequest) async throws -> Device {
        try await voucher.sdk.send(
            "POST",
            "/v1/devices/\(target)/vouch",
            body: body,
            as: Device.self,
            credential: .device
        )
    }

    /// `voucher` approves `device` through the SDK, as the directory lists it.
    static func approve(_ device: Person, by voucher: Person, at now: Date) async throws {
        let listed = try await voucher.sdk.directory(username: voucher.username).devices.first {
            $0.id == device.device.id
        }
        _ = try await voucher.sdk.vouchDevice(
            try #require(listed),
            username: voucher.username,
            voucherDeviceID: voucher.device.id,
            voucher: voucher.identity,
            now: now
        )
    }

    @Test(arguments: Backend.available)
    func aVouchIsCheckedKeptOnceAndPublished(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let laptop = try await Person.make("bob", server: server)
            h.clock.advance(60)
            let phone = try await Person.addDevice("bob", sdk: laptop.sdk, name: "phone")
            let carol = try await Person.make("carol", server: server)
            let now = Int64(h.clock.now().timeIntervalSince1970)

            // Each wrong vouch is refused with its own problem, and none is kept.
            let thief = Identity.generate()
            #expect(
                await problemCode {
                    _ = try await Self.post(
                        laptop,
                        phone.device.id,
                        try Self.vouch(laptop, for: phone.device, at: now, signer: thief)
                    )
                }
                    == .badSignature
            )
            #expect(
                await problemCode {
                    _ = try await Self.post(
                        laptop,
                        phone.device.id,
                        try Self.vouch(laptop, for: phone.device, at: now - 3_600)
                    )
                } == .invalidField
            )
            #expect(
                await problemCode {
                    _ = try await Self.post(
                        laptop,
                        laptop.device.id,
                        try Self.vouch(laptop, for: laptop.device, at: now)
                    )
                } == .invalidField
            )
            #expect(
                await problemCode {
                    _ = try await Self.post(carol, phone.device.id, try Self.vouch(carol, for: phone.device, at: now))
                } == .notFound,
                "another account's device"
            )
            #expect(
                await problemCode {
                    _ = try await Self.post(phone, laptop.device.id, try Self.vouch(phone, for: laptop.device, at: now))
                } == .invalidField,
                "a newer device approving an older one"
            )
            #expect(
                await problemCode {
                    _ = try await Self.post(
                        laptop,
                        phone.device.id,
                        try Self.vouch(laptop, for: phone.device, at: now, keyID: laptop.device.signingKeyId)
                    )
                } == .keyInUse,
                "a key that is not the device's current one"
            )
            #expect(try await laptop.sdk.directory(username: "bob").history.allSatisfy { $0.vouch == nil })

            // The right one is kept on the phone's key, once.
            let vouched = try await Self.post(
                laptop,
                phone.device.id,
                try Self.vouch(laptop, for: phone.device, at: now)
            )
            #expect(vouched.vouch?.deviceId == laptop.device.id)
            #expect(
                await problemCode {
                    _ = try await Self.post(laptop, phone.device.id, try Self.vouch(laptop, for: phone.device, at: now))
                } == .alreadyVouched
            )
            let listed = try await laptop.sdk.devices()
            #expect(listed.first { $0.id == phone.device.id }?.vouch?.deviceId == laptop.device.id)
            #expect(listed.first { $0.id == laptop.device.id }?.vouch == nil)
            let directory = try await carol.sdk.directory(username: "bob")
            let entry = try #require(directory.history.first { $0.deviceId == phone.device.id })
            #expect(entry.vouch?.deviceId == laptop.device.id && entry.vouch?.vouchedAt == now)
            #expect(CountersignClient.devicesAwaitingLink(directory, seenBy: laptop.device.id).isEmpty)
            #expect(try await h.count("audit_events") > 0)
        }
    }

    @Test(arguments: Backend.available)
    func contactsFollowAVouchedDeviceAndStopAtAnUnvouchedOne(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let laptop = try await Person.make("bob", server: server)
            let carol = try await Person.make("carol", server: server)
            var pins = KeyPins()
            let t0 = h.clock.now()
            func check() async throws -> KeyPins.SendCheck {
                try pins.checkBeforeSending(
                    try await carol.sdk.directory(username: "bob"),
                    ownUsername: "carol",
                    ownDeviceID: carol.device.id,
                    ownKeyID: Hex.encode(carol.identity.publicKey.fingerprint.bytes),
                    now: h.clock.now()
                )
            }
            guard case .firstContact(let first) = try await check() else {
                Issue.record("not a first contact")
                return
            }
            pins.pin("bob", first, now: t0)

            // Bob links a phone from his laptop: followed, said as a link, no refusal.
            h.clock.advance(60)
            let phone = try await Person.addDevice("bob", sdk: laptop.sdk, name: "phone")
            let awaiting = CountersignClient.devicesAwaitingLink(
                try await laptop.sdk.directory(username: "bob"),
                seenBy: laptop.device.id
            )
            #expect(awaiting.map(\.id) == [phone.device.id])
            _ = try await laptop.sdk.vouchDevice(
                try #require(awaiting.first),
                username: "bob",
                voucherDeviceID: laptop.device.id,
                voucher: laptop.identity,
                now: h.clock.now()
            )
            guard case .pinned(_, let linked, _) = try await check() else {
                Issue.record("the vouched phone was refused")
                return
            }
            #expect(linked.map(\.device.id) == [phone.device.id] && linked.first?.byName == "laptop")
            #expect(pins.contacts["bob"]?.changedAt == h.clock.now())

            // The phone links a tablet: followed through the phone, now pinned.
            h.clock.advance(60)
            let tablet = try await Person.addDevice("bob", sdk: laptop.sdk, name: "tablet")
            try await Self.approve(tablet, by: phone, at: h.clock.now())
            guard case .pinned(_, let again, _) = try await check() else {
                Issue.record("the tablet vouched by the vouched phone was refused")
                return
            }
            #expect(again.map(\.device.id) == [tablet.device.id])

            // A device nobody approved (what a server slipping in a key looks like): refused until trusted,
            // and a message it signs is named as from an unverified device, not from bob.
            h.clock.advance(60)
            let slipped = try await Person.addDevice("bob", sdk: laptop.sdk, name: "laptop")
            let directory = try await carol.sdk.directory(username: "bob")
            var refused = pins
            #expect(throws: PinError.self) {
                _ = try refused.checkBeforeSending(
                    directory,
                    ownUsername: "carol",
                    ownDeviceID: carol.device.id,
                    ownKeyID: nil,
                    now: t0
                )
            }
            #expect {
                _ = try pins.signer(
                    sender: "bob",
                    keyID: slipped.device.signingKeyId,
                    signedAt: h.clock.now(),
                    directory: directory,
                    ownUsername: "carol",
                    ownDeviceID: carol.device.id,
                    now: h.clock.now()
                )
            } throws: { error in
                guard case PinError.unverifiedDevice(let user, let device) = error else { return false }
                return user == "bob" && device.id == slipped.device.id
            }
            // A vouch by that unpinned device for yet another device is not followed either.
            h.clock.advance(60)
            let fourth = try await Person.addDevice("bob", sdk: laptop.sdk, name: "desk")
            try await Self.approve(fourth, by: slipped, at: h.clock.now())
            var copy = pins
            let links = copy.followLinks(
                try await carol.sdk.directory(username: "bob"),
                ownUsername: "carol",
                ownDeviceID: carol.device.id,
                ownKeyID: nil,
                now: h.clock.now()
            )
            #expect(links.isEmpty)

            // Revoking the phone is followed (no longer sealed to), and a verified contact follows nothing.
            try await laptop.sdk.revokeDevice(id: fourth.device.id)
            try await laptop.sdk.revokeDevice(id: slipped.device.id)
            try await laptop.sdk.revokeDevice(id: phone.device.id)
            var verified = pins
            verified.setVerified("bob", true, now: t0)
            let afterRevoking = try await carol.sdk.directory(username: "bob")
            #expect(throws: PinError.self) {
                _ = try verified.checkBeforeSending(
                    afterRevoking,
                    ownUsername: "carol",
                    ownDeviceID: carol.device.id,
                    ownKeyID: nil,
                    now: t0
                )
            }
            guard case .pinned(_, _, let removed) = try await check() else {
                Issue.record("a removal was refused")
                return
            }
            #expect(removed.map(\.id) == [phone.device.id])
            #expect(pins.contacts["bob"]?.retired?.contains { $0.deviceId == phone.device.id } == true)
        }
    }
    /// The paired authenticator approves too (docs/PROTOCOL.md §1.2): once a messaging device added before it
    /// endorses it, it vouches for a newer device, and a contact who pinned the endorser follows that device;
    /// before the endorsement it may not, and each wrong endorsement is refused.
    @Test(arguments: Backend.available)
    func anEndorsedAuthenticatorApprovesANewDeviceAndContactsFollowIt(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let laptop = try await Person.make("bob", server: server)
            let carol = try await Person.make("carol", server: server)
            var pins = KeyPins()
            func check() async throws -> KeyPins.SendCheck {
                try pins.checkBeforeSending(
                    try await carol.sdk.directory(username: "bob"),
                    ownUsername: "carol",
                    ownDeviceID: carol.device.id,
                    ownKeyID: Hex.encode(carol.identity.publicKey.fingerprint.bytes),
                    now: h.clock.now()
                )
            }
            guard case .firstContact(let first) = try await check() else {
                Issue.record("not a first contact")
                return
            }
            pins.pin("bob", first, now: h.clock.now())
            // A second device, older than the authenticator, linked by the laptop.
            h.clock.advance(60)
            let spare = try await Person.addDevice("bob", sdk: laptop.sdk, name: "spare")
            try await Self.approve(spare, by: laptop, at: h.clock.now())
            h.clock.advance(60)
            let phone = try await laptop.pairAuthenticator(server: server)
            h.clock.advance(60)
            let tablet = try await Person.addDevice("bob", sdk: laptop.sdk, name: "tablet")
            let now = h.clock.now()

            // Not endorsed yet: its vouch is refused, and the directory lists no approver.
            let listedTablet = try #require(try await phone.directory().devices.first { $0.id == tablet.device.id })
            #expect(
                await problemCode { _ = try await phone.vouchDevice(listedTablet, now: now) } == .notAMessagingDevice
            )
            #expect(try await carol.sdk.directory(username: "bob").approvers?.isEmpty == true)

            // Wrong endorsements: another key's signature, a device newer than the authenticator, a messaging
            // device endorsed as an approver.
            let authenticator = try #require(try await laptop.sdk.devices().first { $0.id == phone.state.deviceId })
            #expect(CountersignClient.approverCode(of: authenticator) == phone.approverCode)
            #expect(
                await problemCode {
                    _ = try await laptop.sdk.endorseApprover(
                        authenticator,
                        username: "bob",
                        endorserDeviceID: laptop.device.id,
                        endorser: Identity.generate(),
                        now: now
                    )
                } == .badSignature
            )
            #expect(
                await problemCode {
                    _ = try await tablet.sdk.endorseApprover(
                        authenticator,
                        username: "bob",
                        endorserDeviceID: tablet.device.id,
                        endorser: tablet.identity,
                        now: now
                    )
                } == .invalidField,
                "a device added after the authenticator"
            )
            #expect(
                await problemCode {
                    _ = try await laptop.sdk.endorseApprover(
                        tablet.device,
                        username: "bob",
                        endorserDeviceID: laptop.device.id,
                        endorser: laptop.identity,
                        now: now
                    )
                } == .notFound,
                "a messaging device is linked, not endorsed"
            )

            // The laptop endorses it, once; the directory and the device list say so.
            let endorsed = try await laptop.sdk.endorseApprover(
                authenticator,
                username: "bob",
                endorserDeviceID: laptop.device.id,
                endorser: laptop.identity,
                now: now
            )
            #expect(endorsed.endorsement?.deviceId == laptop.device.id)
            #expect(
                await problemCode {
                    _ = try await laptop.sdk.endorseApprover(
                        authenticator,
                        username: "bob",
                        endorserDeviceID: laptop.device.id,
                        endorser: laptop.identity,
                        now: now
                    )
                } == .alreadyVouched
            )
            let directory = try await carol.sdk.directory(username: "bob")
            #expect(directory.approvers?.map(\.id) == [phone.state.deviceId])
            #expect(!directory.devices.contains { $0.id == phone.state.deviceId }, "nothing is sealed to it")
            #expect(
                try await laptop.sdk.devices().first { $0.id == phone.state.deviceId }?.endorsement?.deviceId
                    == laptop.device.id
            )

            // The authenticator sees the tablet waiting, approves it, and carol follows calmly.
            let mine = try await phone.directory()
            let own = CountersignAuthenticator.endorsement(in: mine, of: phone.state.deviceId)
            #expect(own?.deviceId == laptop.device.id)
            let waiting = CountersignClient.devicesAwaitingLink(mine, seenBy: phone.state.deviceId)
            #expect(waiting.map(\.id) == [tablet.device.id])
            let vouched = try await phone.vouchDevice(try #require(waiting.first), now: now)
            #expect(vouched.vouch?.deviceId == phone.state.deviceId)
            guard case .pinned(_, let linked, _) = try await check() else {
                Issue.record("the device the endorsed authenticator approved was refused")
                return
            }
            #expect(Set(linked.map(\.device.id)) == [spare.device.id, tablet.device.id])
            #expect(linked.first { $0.device.id == tablet.device.id }?.byName == "phone")

            // It approves only devices added after it, of its own account.
            let carolsPhone = try await carol.pairAuthenticator(server: server)
            #expect(
                await problemCode { _ = try await carolsPhone.vouchDevice(listedTablet, now: now) }
                    == .notAMessagingDevice,
                "carol's authenticator is not endorsed"
            )
            let older = try #require(mine.devices.first { $0.id == laptop.device.id })
            #expect(await problemCode { _ = try await phone.vouchDevice(older, now: now) } == .invalidField)

            // Its endorser gone, it is no approver (contacts could not check it either) until endorsed again.
            try await spare.sdk.revokeDevice(id: laptop.device.id)
            #expect(try await carol.sdk.directory(username: "bob").approvers?.isEmpty == true)
            #expect(try await tablet.sdk.devices().first { $0.id == phone.state.deviceId }?.endorsement == nil)
            let stillPaired = try #require(try await tablet.sdk.devices().first { $0.id == phone.state.deviceId })
            #expect(
                await problemCode {
                    _ = try await tablet.sdk.endorseApprover(
                        stillPaired,
                        username: "bob",
                        endorserDeviceID: tablet.device.id,
                        endorser: tablet.identity,
                        now: h.clock.now()
                    )
                } == .invalidField,
                "the tablet was added after the authenticator"
            )
            let again = try await spare.sdk.endorseApprover(
                stillPaired,
                username: "bob",
                endorserDeviceID: spare.device.id,
                endorser: spare.identity,
                now: h.clock.now()
            )
            #expect(again.endorsement?.deviceId == spare.device.id)
            #expect(try await carol.sdk.directory(username: "bob").approvers?.map(\.id) == [phone.state.deviceId])

            // Unpaired, it is no approver any more: the directory stops listing it.
            try await spare.sdk.revokeDevice(id: phone.state.deviceId)
            #expect(try await carol.sdk.directory(username: "bob").approvers?.isEmpty == true)
        }
    }
}
