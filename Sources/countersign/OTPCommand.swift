import ArgumentParser
import CountersignCrypto
import Foundation

extension OTPGenerator.Algorithm: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(rawValue: argument.uppercased().replacingOccurrences(of: "-", with: ""))
    }
}

struct OTPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "otp",
        abstract: "Print a one-time passcode (like `oathtool --totp -b`).",
        discussion: """
            Give either an otpauth:// URI or --secret with its parameters. TOTP unless the URI says hotp \
            (then its counter is used) or --counter is given.
            """
    )

    @Option(name: .long, help: "The shared secret in base32.")
    var secret: String?

    @Option(name: .long, help: "SHA1 (default), SHA256 or SHA512.")
    var algorithm: OTPGenerator.Algorithm?

    @Option(name: .long, help: "6 (default), 7 or 8.")
    var digits: Int?

    @Option(name: .long, help: "TOTP step in seconds (default 30).")
    var period: Int?

    // Taken as text and parsed unconditionally, so "-1" reaches validate() and is refused as a negative
    // counter instead of being read as an unknown flag.
    @Option(
        name: .long,
        parsing: .unconditional,
        help: ArgumentHelp("HOTP: the counter value (0 or more).", valueName: "n")
    )
    var counter: String?

    /// The HOTP counter, once validate() has checked it.
    private var counterValue: UInt64? { counter.flatMap { UInt64($0) } }

    @Option(
        name: .long,
        help: ArgumentHelp("Compute at this time: Unix seconds or ISO 8601 (default: now).", valueName: "time")
    )
    var time: String?

    @Argument(help: "An otpauth:// URI.")
    var uri: String?

    func validate() throws {
        if (secret == nil) == (uri == nil) { throw ValidationError("give either an otpauth:// URI or --secret") }
        if uri != nil, algorithm != nil || digits != nil || period != nil {
            throw ValidationError("--algorithm, --digits and --period come from the URI; leave them out")
        }
        if let counter, UInt64(counter) == nil {
            let digits = counter.dropFirst()
            if counter.hasPrefix("-"), !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
                throw ValidationError(
                    "--counter cannot be negative (\(counter)); HOTP counters run from 0 to \(UInt64.max)"
                )
            }
            throw ValidationError("--counter must be a whole number from 0 to \(UInt64.max), not \(counter)")
        }
    }

    func run() throws {
        let generator: OTPGenerator
        var hotpCounter = counterValue
        do {
            if let uri {
                let parsed = try OTPAuthURI(parsing: uri)
                generator = parsed.generator
                if case .hotp(let c) = parsed.kind, hotpCounter == nil { hotpCounter = c }
            } else {
                guard let bytes = Base32.decode(secret!), !bytes.isEmpty else {
                    throw OTPError.invalidSecret("--secret is not base32 (letters A-Z and digits 2-7)")
                }
                generator = try OTPGenerator(
                    secret: bytes,
                    algorithm: algorithm ?? .sha1,
                    digits: digits ?? 6,
                    period: period ?? 30
                )
            }
        }
        if let hotpCounter {
            print(generator.code(counter: hotpCounter))
        } else {
            print(generator.code(at: try date()))
        }
    }

    private func date() throws -> Date {
        guard let time else { return Date() }
        if let seconds = Double(time) {
            guard seconds >= 0, seconds <= 253_402_300_799 else {
                throw ValidationError("--time must be between 0 and the end of year 9999")
            }
            return Date(timeIntervalSince1970: seconds)
        }
        let f = ISO8601DateFormatter()
        if let d = f.date(from: time) { return d }
        throw ValidationError("--time must be Unix seconds or ISO 8601 like 2026-11-22T10:00:00Z, not \(time)")
    }
}
