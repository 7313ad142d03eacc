import ArgumentParser
import CountersignClient
import Foundation

/// `countersign cancel ID`: withdraws a delayed message (`send --after`) before it is delivered.
struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a delayed message (sent with --after) before it is delivered.",
        discussion: """
            ID is from `countersign outbox` (its first few digits will do for a message sent from this device). The server \
            deletes the ciphertext and every queued copy, and keeps only the record that it was cancelled; `outbox` shows it \
            as cancelled. A message already delivered cannot be taken back.
            """
    )

    @Argument(help: "The message ID.") var id: String
    @OptionGroup var keyOptions: PrivateKeyOptions

    func validate() throws { try StoredMessage.checkPrefix(id) }

    func run() async throws {
        let context = try DeviceContext(keyOptions: keyOptions)
        let full: String
        if StoredMessage.isID(id.lowercased()) {
            full = id.lowercased()
        } else {
            let message = try StoredMessage.find(id)
            guard !message.incoming else {
                throw CLIError.usage(
                    "message \(message.id) was sent to you by \(message.from); only its sender can cancel it"
                )
            }
            full = message.id
        }
        let status: MessageStatus
        do {
            status = try await context.withSession { try await context.client.messageStatus(id: full) }
        } catch let e as ClientError where e.code == .notFound {
            throw CLIError.usage(
                "the server has no message \(full) sent by \(context.username); `countersign outbox` lists yours"
            )
        }
        if status.cancelled { throw CLIError.usage("message \(full) was already cancelled; nothing changed") }
        do {
            try await context.withSession { try await context.client.cancelMessage(id: full) }
        } catch let e as ClientError where e.code == .alreadyDelivered {
            throw CLIError.usage(
                "message \(full) was already delivered at \(PrivateFiles.date(status.deliverAt)); it can no longer be cancelled"
            )
        }
        print("cancelled \(full)")
    }
}
