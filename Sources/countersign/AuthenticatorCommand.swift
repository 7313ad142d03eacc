import ArgumentParser

/// `countersign authenticator …`: this config directory as an authenticator of an account (docs/PROTOCOL.md
/// §3), through the SDK's `CountersignAuthenticator`: push approvals with number matching, passcodes,
/// QR authentication codes.
struct AuthenticatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authenticator",
        abstract: "Make this config directory an authenticator: approve sign-ins, show passcodes, answer QR codes.",
        discussion: """
            Pair with a key from `countersign account mfa pairing-key`. The authenticator's P-256 key goes to keys/ \
            (as `device init` stores keys) and its state to authenticator.json (mode 0600). A config directory is either a \
            messaging device or an authenticator: use COUNTERSIGN_CONFIG_DIR=DIR to keep one of each.
            """,
        subcommands: [
            Pair.self, Status.self, Pending.self, Approve.self, Deny.self, Watch.self, OTP.self, Auth.self, Push.self,
            Logs.self, ApproveDevice.self,
            Unpair.self,
        ]
    )
}
