// swift-tools-version:6.1
import PackageDescription

// libFuzzer targets for every parser of untrusted bytes (scripts/fuzz.sh). A package of its own so the
// main build never sees the sanitizer flags; built with
//   swift build --package-path Fuzz --scratch-path .build-fuzz -c release -Xswiftc -sanitize=fuzzer,address
// The server's parsers that need only CountersignAPI, CountersignCrypto and jwt-kit (Altcha.swift,
// ChallengeSigner.swift) are symlinked in rather than linking CountersignServer, whose sanitized build took
// over 28 minutes here.
let package = Package(
    name: "CountersignFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Countersign", path: ".."),
        // The same exact pins as ../Package.swift.
        .package(url: "https://github.com/apple/swift-crypto.git", exact: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", exact: "5.8.0"),
    ],
    targets: [
        // libFuzzer's driver, called from main.swift: SwiftPM renames a Swift executable's entry point and
        // points `main` at it, so libFuzzer's own `main` cannot be the one that runs.
        .systemLibrary(name: "CFuzzerDriver"),
        .executableTarget(
            name: "countersign-fuzz",
            dependencies: [
                "CFuzzerDriver",
                .product(name: "CountersignCrypto", package: "Countersign"),
                .product(name: "CountersignAPI", package: "Countersign"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            linkerSettings: [.unsafeFlags(["-use-ld=lld"])]
        ),
    ]
)
