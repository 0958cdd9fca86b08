// swift-tools-version: 6.1
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Strata",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "EventStore", targets: ["EventStore"]),
        .library(name: "LMDB", targets: ["LMDB"]),
        .library(name: "StrataData", targets: ["StrataData"]),
        .executable(name: "strata", targets: ["strata"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // C system libraries (Debian -dev packages).
        .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // Thin Swift wrapper over LMDB: environment, transactions, databases, cursors, StorageError.
        .target(name: "LMDB", dependencies: ["CLMDB"], swiftSettings: strictSettings),

        // Domain-agnostic engine: the event log, blobs, projections, checkpoints, time travel.
        .target(
            name: "EventStore",
            dependencies: [
                "LMDB", "CZstd",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),

        // Data layer: the libcurl HTTP client, source definitions, the fetch pipeline and the
        // projections that fold fetched pages into items.
        .target(
            name: "StrataData",
            dependencies: ["EventStore", "CCurl", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),

        // A fixture API server (Hummingbird) with ETag/304, paging, images and per-route faults.
        .target(
            name: "FixtureServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "strata-fixture-server",
            dependencies: ["FixtureServer"],
            swiftSettings: strictSettings
        ),

        // The command-line tool.
        .executableTarget(
            name: "strata",
            dependencies: [
                "EventStore", "StrataData",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),

        .testTarget(name: "LMDBTests", dependencies: ["LMDB"], swiftSettings: strictSettings),
        .testTarget(name: "EventStoreTests", dependencies: ["EventStore", "LMDB", .product(name: "Logging", package: "swift-log")], swiftSettings: strictSettings),
        .testTarget(
            name: "StrataDataTests",
            dependencies: ["StrataData", "EventStore", "FixtureServer"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataCLITests",
            dependencies: ["strata", "EventStore", "LMDB", "FixtureServer"],
            swiftSettings: strictSettings
        ),
    ]
)
