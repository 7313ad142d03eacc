import ArgumentParser

@main
struct Countersign: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "countersign",
        abstract: "Private files and strong sign-in: keys, sealed files (and, later, the server).",
        discussion: """
        Make a key:          countersign keygen -o me.key > me.pub
        Seal to someone:     countersign seal -r them.pub -o report.pdf.cs report.pdf
        Open what you got:   countersign open -i me.key -o report.pdf report.pdf.cs
        FileLock app format: countersign seal --format filelock -r filelock.pem photo.jpg > encrypted_file.pkg
        """,
        version: "0.1.0",
        subcommands: [Keygen.self, Pubkey.self, Seal.self, Open.self]
    )
}
