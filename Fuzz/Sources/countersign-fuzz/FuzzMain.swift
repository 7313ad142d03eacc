import Foundation

/// One libFuzzer executable; `COUNTERSIGN_FUZZ_TARGET` names the parser it feeds (scripts/fuzz.sh runs
/// each in turn). A target returns normally for every input it refuses; a `fatalError` (a roundtrip that
/// does not hold) or a sanitizer report is a finding.
let targets: [String: @Sendable ([UInt8]) -> Void] = [
    "pem": FuzzKeys.pem,
    "pkcs8": FuzzKeys.pkcs8,
    "pingidentity": FuzzKeys.pingIdentity,
    "filelock": FuzzFiles.fileLock,
    "filelock-roundtrip": FuzzFiles.fileLockRoundtrip,
    "sealed-file": FuzzFiles.sealedFile,
    "sealed-file-roundtrip": FuzzFiles.sealedFileRoundtrip,
    "envelope": FuzzMessages.envelope,
    "envelope-roundtrip": FuzzMessages.envelopeRoundtrip,
    "armor": FuzzMessages.armor,
    "otpauth": FuzzOTP.otpauth,
    "cbor-cose": FuzzWebAuthn.cborCOSE,
    "authenticator-data": FuzzWebAuthn.authenticatorData,
    "client-data": FuzzWebAuthn.clientData,
    "api-json": FuzzAPI.json,
    "push-frame": FuzzAPI.pushFrame,
    "altcha": FuzzServer.altcha,
    "device-jwt": FuzzServer.deviceJWT,
]

/// Resolved once: an unknown or missing name stops the run at the first input, listing the names.
let selected: @Sendable ([UInt8]) -> Void = {
    let name = ProcessInfo.processInfo.environment["COUNTERSIGN_FUZZ_TARGET"] ?? ""
    guard let target = targets[name] else {
        FileHandle.standardError.write(
            Data("COUNTERSIGN_FUZZ_TARGET must be one of: \(targets.keys.sorted().joined(separator: " "))\n".utf8)
        )
        exit(2)
    }
    return target
}()

/// libFuzzer's callback (main.swift passes it to LLVMFuzzerRunDriver).
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selected(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// A roundtrip that did not hold: libFuzzer keeps the input as a crash.
func finding(_ what: String) -> Never {
    fatalError("fuzz finding: \(what)")
}
