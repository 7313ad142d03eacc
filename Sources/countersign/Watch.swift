import ArgumentParser
import CountersignClient
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `countersign watch`: the push channel, as PingIdentity's notification showed it.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Stay connected and report each message the moment it arrives.",
        discussion: """
            Each envelope is stored sealed in messages/ (as `inbox` does) before it is acknowledged, and one line \
            is printed per message: "Encrypted Message Received from USER at DATE (id ID). Tap to decrypt and view \
            the message: countersign read ID". Nothing is decrypted and no plaintext is printed. The connection \
            is kept open and re-established with backoff; it ends when this device is revoked or connects \
            elsewhere. With --exec, CMD runs through /bin/sh once per message with COUNTERSIGN_MESSAGE_ID, \
            COUNTERSIGN_MESSAGE_FROM and COUNTERSIGN_MESSAGE_DIRECTION set. On a desktop session, notify-send \
            (when installed) raises a notification too.
            """
    )

    @Flag(name: .long, help: "Print one JSON object a line (id, from, direction, sentAt, acceptedAt) instead.")
    var json = false
    @Option(name: .long, help: "A shell command to run for each message (its id in COUNTERSIGN_MESSAGE_ID).") var exec:
        String?
    @OptionGroup var keyOptions: PrivateKeyOptions

    func run() async throws {
        let context = try DeviceContext(keyOptions: keyOptions)
        try AccountCommand.refuseIPv6LiteralForPush(context.client.server)
        if context.client.deviceToken == nil { try await context.renewSession() }
        let box = UncheckedBox(context)
        let events = context.client.events(renewSession: { try await box.value.renewSession() }) { status in
            switch status {
            case .connecting: break
            case .connected: Terminal.warn("connected; waiting for messages (Ctrl-C to stop)")
            case .disconnected(let reason, let wait):
                Terminal.warn(
                    "disconnected (\(Terminal.printable(reason))); reconnecting in \(String(format: "%.1f", wait)) s"
                )
            }
        }
        let desktop =
            ProcessInfo.processInfo.environment["DISPLAY"] != nil
            || ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"] != nil
        let notifySend = desktop ? Self.which("notify-send") : nil
        let mailbox = Mailbox(store: PrivateFiles.store)
        do {
            for try await event in events {
                guard case .message(let m) = event else { continue }
                let message: StoredMessage
                switch try mailbox.receive(m, report: Inbox.report) {
                case .stored(let stored), .filled(let stored): message = stored
                // Already stored by an earlier run: acknowledged with the next event.
                case .duplicate, .dropped: continue
                }
                report(message, thisDevice: context.device.deviceId)
                if let notifySend, message.incoming {
                    Self.spawn(
                        notifySend,
                        [
                            "Encrypted Message Received",
                            "From \(message.from). Tap to decrypt and view the message: countersign read \(message.id)",
                        ],
                        environment: [:]
                    )
                }
                if let exec {
                    Self.spawn(
                        "/bin/sh",
                        ["-c", exec],
                        environment: [
                            "COUNTERSIGN_MESSAGE_ID": message.id, "COUNTERSIGN_MESSAGE_FROM": message.from,
                            "COUNTERSIGN_MESSAGE_DIRECTION": message.direction,
                        ]
                    )
                }
            }
        } catch let e as ClientError {
            throw CLIError.usage("\(e)")
        }
    }

    private func report(_ m: StoredMessage, thisDevice: String) {
        let iso = ISO8601DateFormatter()
        if json {
            let object: [String: Any] = [
                "id": m.id, "from": m.from, "direction": m.direction, "to": m.to,
                "sentAt": iso.string(from: m.sentAt), "acceptedAt": iso.string(from: m.acceptedAt),
            ]
            if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
                print(Terminal.json(data))
            }
        } else if m.incoming {
            print(
                "Encrypted Message Received from \(Terminal.printable(m.from)) at \(iso.string(from: m.sentAt)) (id \(m.id)). "
                    + "Tap to decrypt and view the message: countersign read \(m.id)"
            )
        } else {
            // The server queues this device's own sends back to it too (that copy brings the envelope).
            let whose =
                m.fromDevice == thisDevice
                ? "this device" : "another of your devices (\(Self.deviceName(m.fromDevice)))"
            print(
                "Sent from \(whose) to \(m.to.map { Terminal.printable($0) }.joined(separator: ", ")) at \(iso.string(from: m.sentAt)) "
                    + "(id \(m.id)): countersign read \(m.id)"
            )
        }
        fflush(nil)  // a pipe to a script gets each line at once
    }

    /// A device of this account by the name pinned for it, else its ID.
    static func deviceName(_ id: String) -> String {
        let pins = try? Pins.book()
        let name = pins?.contacts.values.lazy.flatMap(\.devices).first { $0.id == id }?.name
        return Terminal.printable(name ?? id)
    }

    static func which(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Runs and waits: commands run one at a time, in the order messages arrive. A failing command is
    /// reported and does not stop the watch.
    static func spawn(_ path: String, _ arguments: [String], environment: [String: String]) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        do {
            try p.run()
            p.waitUntilExit()
            if p.terminationStatus != 0 {
                Terminal.warn(
                    "warning: \(path == "/bin/sh" ? arguments.last ?? path : path) exited with \(p.terminationStatus)"
                )
            }
        } catch {
            Terminal.warn("warning: cannot run \(path): \(error.localizedDescription)")
        }
    }
}

/// The CLI's non-Sendable device state, handed to the SDK's reconnect hook: once the watch loop starts,
/// only that hook uses it, between connection attempts, one call at a time.
final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
