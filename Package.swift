// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Countersign",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "CountersignCrypto", targets: ["CountersignCrypto"]),
        .library(name: "CountersignServer", targets: ["CountersignServer"]),
        .library(name: "CountersignClient", targets: ["CountersignClient"]),
        .executable(name: "countersign", targets: ["countersign"]),
    ],
    dependencies: [
        // Exact pins: these are the versions read and tested here.
        .package(url: "https://github.com/apple/swift-crypto.git", exact: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
    ],
    targets: [
        // libargon2, the reference Argon2 implementation, from Debian's libargon2-dev.
        .systemLibrary(name: "CArgon2", pkgConfig: "libargon2", providers: [.apt(["libargon2-dev"])]),
        .target(
            name: "CountersignCrypto",
            dependencies: [
                "CArgon2",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(name: "CountersignServer", dependencies: ["CountersignCrypto"]),
        .target(name: "CountersignClient", dependencies: ["CountersignCrypto"]),
        .executableTarget(
            name: "countersign",
            dependencies: [
                "CountersignCrypto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "countersign-bench",
            dependencies: ["CountersignCrypto", .product(name: "Crypto", package: "swift-crypto")],
            path: "Benchmarks/WrapBench"
        ),
        .testTarget(
            name: "CountersignCryptoTests",
            dependencies: ["CountersignCrypto"],
            resources: [.copy("Vectors")]
        ),
        .testTarget(
            name: "CountersignCLITests",
            dependencies: ["CountersignCrypto"]
        ),
    ]
)
