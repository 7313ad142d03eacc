// swift-tools-version:6.1
import PackageDescription

// How the two executables are linked on Linux. For what a start costs (a no-op command's memory is mostly
// pages the loader touches): relative relocations packed (DT_RELR, glibc ≥ 2.36), 3 MiB of entries
// otherwise read at every start, which gold cannot do and lld (shipped with the toolchain) can; and no
// exported symbol table, 4 MiB the loader's symbol lookups would search (nothing looks symbols up in
// them). For hardening: every symbol bound at start, so the whole GOT is read-only (full RELRO).
let leanStart: [LinkerSetting] = [
    .unsafeFlags(
        [
            "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "-z", "-Xlinker", "now",
            "-Xlinker", "--no-export-dynamic",
        ],
        .when(platforms: [.linux])
    )
]

let package = Package(
    name: "Countersign",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CountersignCrypto", targets: ["CountersignCrypto"]),
        .library(name: "CountersignAPI", targets: ["CountersignAPI"]),
        .library(name: "CountersignServer", targets: ["CountersignServer"]),
        .library(name: "CountersignClient", targets: ["CountersignClient"]),
        .library(name: "CountersignQR", targets: ["CountersignQR"]),
        .executable(name: "countersign", targets: ["countersign"]),
        .executable(name: "countersign-server", targets: ["countersign-server"]),
    ],
    dependencies: [
        // Exact pins: these are the versions read and tested here.
        .package(url: "https://github.com/apple/swift-crypto.git", exact: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1"),
        .package(url: "https://github.com/vapor/fluent-kit.git", exact: "1.57.0"),
        .package(url: "https://github.com/vapor/fluent-sqlite-driver.git", exact: "4.9.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver.git", exact: "2.14.0"),
        .package(url: "https://github.com/vapor/sql-kit.git", exact: "3.36.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", exact: "1.33.2"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", exact: "1.13.2"),
        .package(url: "https://github.com/apple/swift-log.git", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", exact: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio.git", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", exact: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", exact: "2.13.0"),
        // The push channel's WebSocket client (the server side uses NIOWebSocket directly).
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", exact: "1.6.2"),
        // ES256 push challenges and answers (docs/PROTOCOL.md §3).
        .package(url: "https://github.com/vapor/jwt-kit.git", exact: "5.8.0"),
        .package(url: "https://github.com/vapor/async-kit.git", exact: "1.22.0"),
        // The SDK's HTTP client: URLSession on Linux (libcurl) spun a core while a server did not answer
        // (issue 19.12) and gave no hold on response size; this one streams, over SwiftNIO, with deadlines.
        .package(url: "https://github.com/swift-server/async-http-client.git", exact: "1.37.0"),
        // APNs over HTTP/2 (docs/PROTOCOL.md §2.3): its TLS trust roots (the version async-http-client resolves).
        .package(url: "https://github.com/apple/swift-nio-ssl.git", exact: "2.37.6"),
        // `swift package generate-documentation --target CountersignClient`: the SDK's DocC (no code of ours links it).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", exact: "1.5.0"),
    ],
    targets: [
        // libargon2, the reference Argon2 implementation, from Debian's libargon2-dev: hashes with p > 1,
        // the RFC 9106 known-answer test, and the peer libsodium is checked against.
        .systemLibrary(name: "CArgon2", pkgConfig: "libargon2", providers: [.apt(["libargon2-dev"])]),
        // libsodium, whose Argon2id picks SSE/AVX code at run time (faster than libargon2's scalar build);
        // password hashes are made and checked with it (Debian's libsodium-dev).
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // libqrencode, for QR codes (pairing, authentication codes, otpauth URIs), from Debian's libqrencode-dev.
        .systemLibrary(name: "CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        // QR codes as a matrix, terminal text, PBM and PNG bytes; no I/O.
        .target(name: "CountersignQR", dependencies: ["CQRencode"]),
        .target(
            name: "CountersignCrypto",
            dependencies: [
                "CArgon2",
                "CSodium",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // The wire types, shared by the server and the SDK; no logic, no I/O.
        .target(name: "CountersignAPI"),
        // Declarations of the SQLite C functions the server calls directly, resolved at link time against
        // SQLiteNIO's vendored copy (never a second SQLite: see its header).
        .target(name: "CSQLiteNIO"),
        .target(
            name: "CountersignServer",
            dependencies: [
                "CountersignCrypto",
                "CountersignAPI",
                "CountersignWebClient",
                "CSQLiteNIO",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "FluentKit", package: "fluent-kit"),
                .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "AsyncKit", package: "async-kit"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            resources: [.copy("openapi.yaml")]
        ),
        // The web client (docs/WEB.md): plain ES modules, HTML and CSS in web/, a resource served by the
        // server as it is (no build step); a client of the HTTP API beside the SDK, not part of the server.
        .target(name: "CountersignWebClient", resources: [.copy("web")]),
        .target(
            name: "CountersignClient",
            dependencies: [
                "CountersignCrypto", "CountersignAPI", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "WSClient", package: "swift-websocket"), .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The command-line tool. It links no server library: `countersign serve` and `countersign admin` run
        // countersign-server, installed beside it.
        // How both executables run their command line (errors, usage, exit codes).
        .target(
            name: "CountersignCommandLine",
            dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .executableTarget(
            name: "countersign",
            dependencies: [
                "CountersignCommandLine",
                "CountersignCrypto",
                "CountersignAPI",
                "CountersignClient",
                "CountersignQR",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            linkerSettings: leanStart,
            plugins: ["CommitStamp"]
        ),
        .executableTarget(
            name: "countersign-server",
            dependencies: [
                "CountersignCommandLine",
                "CountersignServer",
                "CountersignAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: leanStart,
            plugins: ["CommitStamp"]
        ),
        // The commit a build comes from, for `countersign version`.
        .plugin(name: "CommitStamp", capability: .buildTool()),
        .executableTarget(
            name: "countersign-bench-messages",
            dependencies: ["CountersignClient", "CountersignCrypto"],
            path: "Benchmarks/MessageBench"
        ),
        .executableTarget(
            name: "countersign-bench",
            dependencies: ["CountersignCrypto", .product(name: "Crypto", package: "swift-crypto")],
            path: "Benchmarks/WrapBench"
        ),
        .executableTarget(
            name: "countersign-bench-push",
            dependencies: [
                "CountersignServer", "CountersignCrypto", "CountersignAPI",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "FluentKit", package: "fluent-kit"), .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Benchmarks/PushBench"
        ),
        // The test-vector generator (package access to the seeded sealing APIs) and the command that
        // rewrites the vectors with it: scripts/regenerate-vectors.sh.
        .target(
            name: "CountersignVectors",
            dependencies: ["CountersignCrypto", .product(name: "Crypto", package: "swift-crypto")],
            path: "scripts/vectors/CountersignVectors"
        ),
        .executableTarget(
            name: "countersign-vectors",
            dependencies: ["CountersignVectors"],
            path: "scripts/vectors/countersign-vectors"
        ),
        // The tests' child processes (posix_spawn: Foundation's Process crashes a process with many descriptors),
        // a software WebAuthn authenticator, and what the CLI and system tests share (`CLI`, config directories).
        .target(
            name: "CountersignTestSupport",
            dependencies: ["CountersignCrypto", .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/CountersignTestSupport"
        ),
        .testTarget(
            name: "CountersignCryptoTests",
            dependencies: ["CountersignCrypto", "CArgon2", "CountersignVectors", "CountersignTestSupport"],
            resources: [.copy("Vectors")]
        ),
        // The `countersign` command and its peers (OpenSSL, oathtool, Python's `cryptography`, Python servers
        // that misbehave), with no server of ours running: part of `scripts/test.sh --fast`.
        .testTarget(
            name: "CountersignCLITests",
            dependencies: ["CountersignCrypto", "CountersignClient", "CountersignQR", "CountersignTestSupport"]
        ),
        // Real `countersign serve` processes (on SQLite files and on PostgreSQL) driven by the CLI and the SDK:
        // crash safety, push, MFA, limits. Left out of `scripts/test.sh --fast`.
        .testTarget(
            name: "CountersignSystemTests",
            dependencies: [
                "CountersignCrypto", "CountersignClient", "CountersignTestSupport",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The SDK's client-side rules (mailbox, pins, keyring, device state) over in-memory fakes of its
        // storage protocols, and its directory store on real files.
        .testTarget(
            name: "CountersignClientTests",
            dependencies: ["CountersignAPI", "CountersignClient", "CountersignCrypto"]
        ),
        .testTarget(
            name: "CountersignServerTests",
            dependencies: [
                "CountersignServer",
                "CountersignWebClient",
                "CountersignClient",
                "CountersignTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ]
)
