import CountersignCrypto

/// The text of a message to send: the argument, or standard input for `-` or none. UTF-8, at most 1 MiB
/// (docs/SPEC.md §8.5); anything else belongs in a sealed file.
enum MessageText {
    static func read(_ argument: String?) throws -> [UInt8] {
        let bytes: [UInt8]
        if let argument, argument != "-" {
            bytes = Array(argument.utf8)
        } else {
            guard
                let read = try PrefixedSource.readAll(
                    FileDescriptorSource(fd: 0, owns: false),
                    limit: MessageEnvelope.maxPlaintext
                )
            else {
                throw CLIError.usage(
                    "the message on standard input is over 1 MiB; seal larger content as a file with `countersign seal`"
                )
            }
            bytes = read
        }
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw CLIError.usage("the message is not UTF-8 text; seal binary content as a file with `countersign seal`")
        }
        guard bytes.count <= MessageEnvelope.maxPlaintext else {
            throw CLIError.usage(
                "the message is \(bytes.count) bytes; the limit is 1 MiB. Seal larger content as a file with `countersign seal`"
            )
        }
        return bytes
    }
}
