import ArgumentParser

/// How a command answers when the server asks for a recent sign-in before a sensitive change: the
/// password (from a file or the terminal) and, on an account with a second factor, that factor too
/// (a passcode, a recovery code, or, with neither, a push approval on a paired authenticator).
struct ReauthOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Read your account password from this file if the server asks for it again.",
            valueName: "file"
        )
    )
    var passwordFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            """
            If the server asks for a recent sign-in and the account has a second factor: this passcode (authenticator app, or \
            `countersign authenticator otp`) instead of a push approval.
            """,
            valueName: "code"
        )
    )
    var otp: String?

    @Option(name: .long, help: ArgumentHelp("As --otp, with a recovery code (spent).", valueName: "code"))
    var recoveryCode: String?

    func validate() throws {
        try MFALogin.validate(otp: otp, recoveryCode: recoveryCode)
    }
}
