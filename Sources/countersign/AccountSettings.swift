import ArgumentParser
import CountersignClient
import Foundation

extension AccountCommand {
    /// `countersign account settings`: the account's re-authentication interval (LockWhisper's choices).
    struct Settings: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show or change how often the server asks for your password again before sensitive changes.",
            discussion: """
                Sensitive changes (password, devices, settings) need a sign-in within the interval: never (the default), 5m, \
                10m, 30m or 60m. Changes to the second factors need one within 10 minutes whatever it is. Changing it may \
                itself ask for the password (--password-file FILE) and second factor.
                """
        )
        @Option(name: .long, help: ArgumentHelp("never, 5m, 10m, 30m or 60m.", valueName: "interval"))
        var reauthInterval: String?
        @Flag(name: .long, help: "Print the settings as the server's JSON object.") var json = false
        @OptionGroup var reauth: ReauthOptions

        /// Minutes for `never`, `0`, `5`, `5m`, `5min` …; nil for anything the server does not offer.
        static func minutes(_ text: String) -> Int? {
            let t = text.lowercased()
            if t == "never" { return 0 }
            let digits = t.hasSuffix("min") ? String(t.dropLast(3)) : t.hasSuffix("m") ? String(t.dropLast()) : t
            guard let n = Int(digits), AccountSettings.reauthChoices.contains(n) else { return nil }
            return n
        }

        func validate() throws {
            if let reauthInterval, Self.minutes(reauthInterval) == nil {
                throw ValidationError("--reauth-interval takes never, 5m, 10m, 30m or 60m, not \(reauthInterval)")
            }
        }

        func run() async throws {
            let (client, session) = try DeviceCommand.accountClient()
            let settings: AccountSettings
            if let minutes = reauthInterval.flatMap(Self.minutes) {
                settings = try await DeviceCommand.withReauthentication(
                    client,
                    session,
                    reauth,
                    what: "changing the re-authentication interval"
                ) {
                    try await client.updateSettings(AccountSettings(reauthIntervalMinutes: minutes))
                }
            } else {
                settings = try await DeviceCommand.accountCall { try await client.me() }.settings
            }
            if json {
                print(String(decoding: try PrivateFiles.encoder().encode(settings), as: UTF8.self))
            } else {
                print("re-authentication: \(Self.describe(settings.reauthIntervalMinutes))")
            }
        }

        static func describe(_ minutes: Int) -> String { minutes == 0 ? "never" : "every \(minutes) minutes" }
    }
}
