import Crypto
import Foundation
import Logging

/// Every service the routes serve, over one open storage, assembled once: each is given what it uses at
/// construction, and sessions that end (`SessionService`) reach the push channel's connections on every
/// node through the storage's bus.
package struct ServerServices: Sendable {
    package let storage: any ServerStorage
    package let sessions: SessionService
    package let signIn: SignInService
    package let accounts: AccountService
    package let devices: DeviceService
    package let messages: MessageService
    package let mfa: MFAService
    package let push: PushService
    package let passkeys: PasskeyService
    let bindings: SessionBindingService
    let oidc: OIDCService
    let backChannel: BackChannelLogout
    let vapid: VAPIDKey
    package let notifications: NotificationService
    /// What requests started and did not wait for: drained before the storage closes.
    package let background: BackgroundWork
    let logger: Logger

    /// `signInStore`: the sign-in's store when it is not `storage` itself (tests wrap it to land a write
    /// mid-check). `alsoTell`: told of every session ending besides the push channel (tests).
    /// `backChannelDeliver`: how logout tokens are posted (tests catch them; HTTP otherwise).
    package static func assemble(
        storage: any ServerStorage,
        config: ServerConfiguration,
        clock: any WallClock,
        random: any RandomSource,
        logger: Logger,
        signInStore: (any SignInStore)? = nil,
        alsoTell: @escaping @Sendable (SessionEnding) -> Void = { _ in },
        backChannelDeliver: BackChannelLogout.Deliver? = nil,
        pushTransport: WebPushSender.Transport? = nil,
        pushResolver: WebPushSender.Resolver? = nil,
        apnsTransport: APNsSender.Transport? = nil
    ) async throws -> ServerServices {
        // The push channel's signals: messages and MFA publish, this node's connections (the hub) receive.
        // Several nodes share a PostgreSQL database and hear of each other's sends through it; one process
        // serves a SQLite file (SQLiteServeLock).
        // Before any metric is made (the push hub's): swift-metrics hands out no-op metrics until then.
        ServerMetrics.bootstrap()
        let hub = PushHub()
        let bus = storage.pushBus(logger: logger) { hub.apply($0) }
        let audit = AuditLog(store: storage, clock: clock)
        let background = BackgroundWork()
        let vapid = try await VAPIDKey.load(store: storage, random: random)
        let notificationMetrics = NotificationMetrics()
        let pushPolicy = PushEndpointPolicy(allowedHosts: config.pushAllowedHosts)
        let notifications = NotificationService(
            store: storage,
            policy: pushPolicy,
            webPush: WebPushSender(
                vapid: vapid,
                subject: config.vapidSubject,
                policy: pushPolicy,
                store: storage,
                metrics: notificationMetrics,
                background: background,
                clock: clock,
                logger: logger,
                transport: pushTransport,
                resolver: pushResolver
            ),
            apns: config.apns.map {
                APNsSender(
                    settings: $0,
                    store: storage,
                    metrics: notificationMetrics,
                    background: background,
                    clock: clock,
                    logger: logger,
                    transport: apnsTransport
                )
            },
            metrics: notificationMetrics,
            background: background,
            clock: clock,
            logger: logger
        )
        let pairingGrants = PairingGrantOpener()
        let oidc = OIDCService(
            store: storage,
            accounts: storage,
            audit: audit,
            keys: OIDCKeyRing(
                store: storage,
                sealingKey: SymmetricKey(
                    data: try await storage.serverSecret(name: "oidc-key-seal") { random.bytes(32) }
                ),
                clock: clock,
                random: random
            ),
            issuer: config.publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 },
            clock: clock,
            random: random,
            pairwiseKey: SymmetricKey(
                data: try await storage.serverSecret(name: "oidc-pairwise-key") { random.bytes(32) }
            ),
            pairing: pairingGrants
        )
        let logout = BackChannelLogout(
            oidc: oidc,
            deliver: backChannelDeliver ?? BackChannelLogout.http,
            logger: logger
        )
        // A browser that signs out ends its provider session too: the applications it signed in to through the
        // OpenID Connect provider lose their grants (before its sessions go, which name them) and hear of it
        // (back-channel logout, never waited for).
        let signingOut: @Sendable (SessionService.SignedOutBrowser) async -> Void = { browser in
            do {
                let grants = try await storage.revokeOIDCGrants(
                    accountID: browser.accountID,
                    sessionID: browser.sessionName,
                    bindingID: browser.bindingID,
                    now: clock.now()
                )
                if !grants.isEmpty { background.run(cancellable: true) { await logout.send(grants) } }
            } catch {
                logger.error("could not revoke a signed-out browser's OpenID Connect grants: \(error)")
            }
        }
        let sessions = SessionService(
            store: storage,
            config: config,
            clock: clock,
            random: random,
            signingOut: signingOut
        ) { ending in
            alsoTell(ending)
            bus.publish(.ended(ending))
            // Every session of the account ended (sign out everywhere, a password change, a lock): so does what
            // it granted other applications through the OpenID Connect provider, and the pairings it opened.
            if case .account(let accountID) = ending {
                background.run { [logger] in
                    do {
                        let grants = try await storage.revokeOIDCGrants(accountID: accountID, now: clock.now())
                        if !grants.isEmpty { background.run(cancellable: true) { await logout.send(grants) } }
                    } catch {
                        logger.error("could not revoke the account's OpenID Connect grants: \(error)")
                    }
                    // After the grants: a code exchange that opens a pairing then finds its grant revoked.
                    do { try await storage.deletePairingKeys(accountID: accountID) } catch {
                        logger.error("could not end the account's open pairings: \(error)")
                    }
                }
            }
        }
        let captcha = try await CaptchaGate(
            store: storage,
            maxNumber: config.captchaMaxNumber,
            clock: clock,
            random: random
        )
        let hashing = try PasswordHashing(hasher: config.hasher, maxQueued: config.maxQueuedHashes, random: random)
        let signIn = SignInService(
            store: signInStore ?? storage,
            sessions: sessions,
            audit: audit,
            config: config,
            clock: clock,
            captcha: captcha,
            hashing: hashing
        )
        let accounts = AccountService(
            store: storage,
            sessions: sessions,
            signIn: signIn,
            audit: audit,
            config: config,
            clock: clock,
            random: random,
            captcha: captcha,
            hashing: hashing,
            logger: logger
        )
        let devices = DeviceService(
            store: storage,
            accounts: accounts,
            sessions: sessions,
            signIn: signIn,
            audit: audit,
            config: config,
            clock: clock,
            random: random
        )
        let messages = MessageService(
            store: storage,
            accounts: accounts,
            config: config,
            clock: clock,
            onDue: { accounts in bus.publish(.due(accounts: accounts)) },
            onQueued: { id in notifications.messageQueued(id: id) }
        )
        let mfa = try await MFAService(
            store: storage,
            passkeys: storage,
            accounts: accounts,
            devices: devices,
            sessions: sessions,
            signIn: signIn,
            audit: audit,
            config: config,
            clock: clock,
            random: random,
            notify: { devices, transaction, expires in
                notifications.approvalRequested(devices: devices, transactionID: transaction, expiresAt: expires)
            }
        ) { signal in bus.publish(signal) }
        pairingGrants.set(spend: { token in try await mfa.spendPairingGrant(token) }) {
            token,
            accountID,
            payloadHash,
            keyHash,
            origin in
            switch try await mfa.openPairingGrant(
                token: token,
                accountID: accountID,
                payloadHash: payloadHash,
                keyHash: keyHash,
                origin: origin
            ) {
            case .opened: .opened
            case .payloadUsed: .payloadUsed
            case .tooMany: .tooMany
            }
        }
        let push = PushService(
            store: storage,
            sessions: sessions,
            messages: messages,
            clock: clock,
            random: random,
            logger: logger,
            hub: hub,
            bus: bus,
            pendingChallenges: { device in try await mfa.pendingChallenges(deviceID: device) },
            cameDue: { id in notifications.messageQueued(id: id) },
            presence: { device, seen in notifications.connection(device, seen: seen) }
        )
        let passkeys = PasskeyService(
            store: storage,
            accounts: accounts,
            sessions: sessions,
            signIn: signIn,
            audit: audit,
            rp: RelyingParty(
                publicURL: config.publicURL.flatMap { URL(string: $0) },
                extraOrigins: config.webAuthnOrigins
            ),
            clock: clock,
            random: random,
            signInKey: SymmetricKey(
                data: try await storage.serverSecret(name: "passkey-sign-in-key") { random.bytes(32) }
            )
        )
        let bindings = SessionBindingService(
            store: storage,
            sessions: sessions,
            signIn: signIn,
            audit: audit,
            config: config,
            clock: clock,
            random: random,
            nonces: AddressThrottle(config.deviceNoncesPerAddress)
        )
        return ServerServices(
            storage: storage,
            sessions: sessions,
            signIn: signIn,
            accounts: accounts,
            devices: devices,
            messages: messages,
            mfa: mfa,
            push: push,
            passkeys: passkeys,
            bindings: bindings,
            oidc: oidc,
            backChannel: logout,
            vapid: vapid,
            notifications: notifications,
            background: background,
            logger: logger
        )
    }
}
