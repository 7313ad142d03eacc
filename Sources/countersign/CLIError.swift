/// Errors of the command line itself (the library's `KeyError`/`SealError` carry their own messages).
enum CLIError: Error, CustomStringConvertible {
    case usage(String)
    case io(String)

    var description: String {
        switch self {
        case .usage(let s), .io(let s): return s
        }
    }
}
