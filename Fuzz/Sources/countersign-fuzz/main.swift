import CFuzzerDriver
import Foundation

// libFuzzer parses the command line (-max_total_time=…, corpus directories) and calls `fuzzOne` per input.
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOne))
