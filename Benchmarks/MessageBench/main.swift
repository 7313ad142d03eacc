import CountersignClient
import CountersignCrypto
import Foundation

// The client side of scripts/bench-messages.sh:
//   countersign-bench-messages setup URL DEVICES MESSAGES DIR [PREFIX]
//     DEVICES sender accounts and DEVICES recipient accounts, one device each (through the SDK, as the CLI
//     does), then MESSAGES envelopes per sender, each signed by the sender's device and sealed to 2 devices
//     (the recipient's and the sender's own), written as ready request bodies: DIR/bodies-N.txt (one JSON per
//     line) and DIR/tokens.txt (sender device tokens), DIR/recipients.txt (recipient device tokens).
//   countersign-bench-messages drain URL DIR
//     every recipient device fetches (100 a page) and acknowledges its whole queue, concurrently; prints the
//     messages fetched+acknowledged per second.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("countersign-bench-messages: \(message)\n".utf8))
    exit(2)
}

let args = Array(CommandLine.arguments.dropFirst())
guard let mode = args.first else { fail("usage: setup URL DEVICES MESSAGES DIR | drain URL DIR") }

func device(_ username: String, server: URL) async throws -> (CountersignClient, Identity) {
    let sdk = CountersignClient(server: server)
    try await sdk.register(username: username, password: "correct horse battery", name: "Bench", lastname: "Mark")
    try await sdk.signIn(username: username, password: "correct horse battery")
    let identity = Identity.generate()
    let d = try await sdk.registerDevice(name: "bench", signing: identity, encryptionKey: identity.publicKey)
    try await sdk.openDeviceSession(deviceID: d.id, signing: identity)
    return (sdk, identity)
}

switch mode {
case "setup":
    guard (5...6).contains(args.count), let server = URL(string: args[1]), let devices = Int(args[2]),
        let messages = Int(args[3])
    else {
        fail("usage: setup URL DEVICES MESSAGES DIR [PREFIX]")
    }
    // A prefix keeps the names of several setups against one server apart (scripts/soak.sh).
    let prefix = args.count == 6 ? args[5] : ""
    let dir = URL(fileURLWithPath: args[4])
    var senders: [(CountersignClient, Identity, PublicKey)] = []
    var recipientTokens: [String] = []
    for i in 0..<devices {
        let (s, sKey) = try await device("\(prefix)sender\(i)", server: server)
        let (r, rKey) = try await device("\(prefix)recipient\(i)", server: server)
        senders.append((s, sKey, rKey.publicKey))
        recipientTokens.append(r.deviceToken!)
    }
    // Sealing is client work: done before the timed run, on every core.
    let started = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for (i, (_, key, recipient)) in senders.enumerated() {
            group.addTask {
                var lines = ""
                lines.reserveCapacity(messages * 700)
                for n in 0..<messages {
                    let text = Array("benchmark message \(n) from sender \(i)".utf8)
                    let envelope = try MessageEnvelope.seal(
                        text,
                        from: key,
                        to: [recipient, key.publicKey],
                        created: Date()
                    )
                    let body = SendMessageRequest(to: ["\(prefix)recipient\(i)"], envelope: Base64URL(envelope.bytes))
                    lines += String(decoding: try JSONEncoder().encode(body), as: UTF8.self) + "\n"
                }
                try lines.write(
                    to: dir.appendingPathComponent("bodies-\(i + 1).txt"),
                    atomically: true,
                    encoding: .utf8
                )
            }
        }
        try await group.waitForAll()
    }
    let sealed = ContinuousClock.now - started
    try senders.map { $0.0.deviceToken! }.joined(separator: "\n").appending("\n").write(
        to: dir.appendingPathComponent("tokens.txt"),
        atomically: true,
        encoding: .utf8
    )
    try recipientTokens.joined(separator: "\n").appending("\n").write(
        to: dir.appendingPathComponent("recipients.txt"),
        atomically: true,
        encoding: .utf8
    )
    print("sealed \(devices * messages) envelopes (2 devices each) in \(sealed)")
case "drain":
    guard args.count == 3, let server = URL(string: args[1]) else { fail("usage: drain URL DIR") }
    let tokens = try String(
        contentsOf: URL(fileURLWithPath: args[2]).appendingPathComponent("recipients.txt"),
        encoding: .utf8
    )
    .split(separator: "\n").map(String.init)
    let started = ContinuousClock.now
    let total = try await withThrowingTaskGroup(of: Int.self) { group in
        for token in tokens {
            group.addTask {
                let sdk = CountersignClient(server: server, deviceToken: token)
                var count = 0
                while true {
                    let page = try await sdk.fetchMessages(after: 0, limit: 100)
                    if page.messages.isEmpty { return count }
                    count += try await sdk.acknowledge(page.messages.map(\.seq))
                }
            }
        }
        var sum = 0
        for try await n in group { sum += n }
        return sum
    }
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print(
        String(
            format: "fetched+acknowledged %d messages on %d devices in %.2f s = %.0f messages/s",
            total,
            tokens.count,
            seconds,
            Double(total) / seconds
        )
    )
default:
    fail("unknown mode \(mode); use setup or drain")
}
