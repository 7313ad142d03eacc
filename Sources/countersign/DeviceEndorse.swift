import ArgumentParser
import CountersignAPI
import CountersignClient
import CountersignCrypto
import Foundation

/// `countersign device endorse`: lets the account's paired authenticator approve new devices
/// (docs/PROTOCOL.md §1.2), after the person compared the code the authenticator shows.
extension DeviceCommand {
    struct Endorse: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Let your paired authenticator approve new devices, after comparing its code.",
            discussion: """
                Lists the authenticators of your account paired after this device that no device endorsed yet, \
                shows each one's name, fingerprint and code, and asks "Is this your authenticator?". Endorsing \
                signs a statement over the authenticator's key with this device's key: the authenticator may then \
                approve your new devices (`countersign authenticator approve-device`), and people who pinned this \
                device follow what it approves. Compare with `countersign authenticator status` on the \
                authenticator. Not at a terminal, pass --code and --yes.
                """
        )
        @Argument(help: "The authenticator's ID (see `countersign device list`); default: the one waiting.")
        var deviceID: String?
        @Option(name: .long, help: "The code the authenticator shows; only an authenticator with it is endorsed.")
        var code: String?
        @Flag(name: .long, help: "Endorse without asking (requires --code).") var yes = false
        @OptionGroup var keyOptions: PrivateKeyOptions

        func validate() throws { try DeviceCommand.validate(code: code, yes: yes, what: "the authenticator") }

        func run() async throws {
            let context = try DeviceContext(keyOptions: keyOptions)
            let (_, me) = try await DeviceCommand.ownListing(context)
            let (account, _) = try DeviceCommand.accountClient()
            let listed = try await DeviceCommand.accountCall { try await account.devices() }
            var waiting = listed.filter {
                $0.kind == .authenticator && $0.revokedAt == nil && $0.endorsement == nil && $0.createdAt > me.createdAt
            }
            if let deviceID {
                waiting = waiting.filter { $0.id == deviceID }
                guard !waiting.isEmpty else {
                    throw CLIError.usage(
                        "authenticator \(Terminal.printable(deviceID)) is not waiting for this device's endorsement "
                            + "(it is not an active authenticator of yours, was endorsed already, or was paired before this device); "
                            + "see `countersign device list`"
                    )
                }
            }
            if let code {
                let digits = code.filter(\.isNumber)
                waiting = waiting.filter { CountersignClient.approverCode(of: $0)?.filter(\.isNumber) == digits }
                guard !waiting.isEmpty else {
                    throw CLIError.usage(
                        "REFUSED: no authenticator waiting has the code \(code); nothing was endorsed. Check the code "
                            + "`countersign authenticator status` shows; a different code means the server lists another key"
                    )
                }
            }
            guard !waiting.isEmpty else {
                print("no authenticator of \(context.username) paired after this device is waiting to be endorsed")
                return
            }
            guard waiting.count == 1, let target = waiting.first else {
                print("authenticators waiting to be endorsed:")
                for d in waiting {
                    print(
                        "  \(d.id)  \"\(Terminal.printable(d.name))\"  code \(CountersignClient.approverCode(of: d) ?? "?")"
                    )
                }
                throw CLIError.usage("name one: `countersign device endorse AUTHENTICATOR-ID`")
            }
            print("Is this your authenticator?")
            print(
                "  name:        \"\(Terminal.printable(target.name))\" (\(target.id)), paired \(PrivateFiles.date(target.createdAt))"
            )
            print("  fingerprint: \(KeyPins.fingerprint(hex: target.signingKeyId))")
            print("  code:        \(CountersignClient.approverCode(of: target) ?? "?")")
            guard
                try DeviceCommand.confirm(
                    yes: yes && code != nil,
                    "Endorse it only if the authenticator shows this code.",
                    what: "the authenticator"
                )
            else {
                print("not endorsed")
                return
            }
            let identity = try context.currentIdentity()
            _ = try await context.withSession {
                try await context.client.endorseApprover(
                    target,
                    username: context.username,
                    endorserDeviceID: me.id,
                    endorser: identity,
                    now: Date()
                )
            }
            print(
                "allowed \"\(Terminal.printable(target.name))\" to approve your new devices (`countersign authenticator approve-device` on it)"
            )
        }
    }

    /// A link or approver code given on the command line: 24 digits, spaces or dashes between.
    static func validate(code: String?, yes: Bool, what: String) throws {
        if yes, code == nil { throw ValidationError("--yes needs --code: compare the code \(what) shows") }
        if let code,
            code.filter(\.isNumber).count != 24 || code.contains(where: { !$0.isNumber && $0 != " " && $0 != "-" })
        {
            throw ValidationError("--code takes the 24 digits \(what) shows (spaces allowed)")
        }
    }

    /// True when `yes`, else the person typed yes at the terminal after `advice`; refused off a terminal.
    static func confirm(yes: Bool, _ advice: String, what: String) throws -> Bool {
        if yes { return true }
        guard isatty(0) == 1 else {
            throw CLIError.usage("not at a terminal: pass --code with the code \(what) shows (not this one), and --yes")
        }
        print("\(advice) Type yes to go on: ", terminator: "")
        fflush(nil)
        return (Swift.readLine() ?? "").trimmingCharacters(in: .whitespaces).lowercased() == "yes"
    }
}
