// swift-tools-version: 6.1
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The storage engine's hot paths (folds, hashing, verify, compaction) optimized in debug builds
/// too: the test suite runs thousands of them, and unoptimized generic code there costs several
/// times the CPU.
let engineSettings: [SwiftSetting] = strictSettings + [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "Strata",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "EventStore", targets: ["EventStore"]),
        .library(name: "LMDB", targets: ["LMDB"]),
        .library(name: "StrataData", targets: ["StrataData"]),
        // The fixture API server, for the benchmarks package.
        .library(name: "FixtureServer", targets: ["FixtureServer"]),
        .executable(name: "strata", targets: ["strata"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/Swinject/Swinject", from: "2.10.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2", traits: []),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
    ],
    targets: [
        // C system libraries (Debian -dev packages).
        .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        // gzip members for WARC files (zlib is on every system libcurl is).
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // A shared library opened with dlopen on first use, for the three targets below.
        .target(name: "CLibraryLoader", linkerSettings: [.linkedLibrary("dl")]),
        // libcurl's header at build time; the library itself is opened on first use, so a
        // command that makes no request does not load it and the ~28 libraries it needs.
        .target(name: "CCurl", dependencies: ["CLibraryLoader"]),
        // SQLite (for `export --sqlite`), likewise opened on first use.
        .target(name: "CSQLite", dependencies: ["CLibraryLoader"]),
        // libbrotlidec for `br` recorded bodies read to be redacted (libcurl's own dependency).
        .target(name: "CBrotli", dependencies: ["CLibraryLoader"]),
        // Thumbnails: PNG and JPEG to RGBA (C, because libjpeg reports errors with longjmp) and
        // RGBA to symbols (chafa). libpng, libjpeg and libchafa (with glib and pcre2) are opened
        // on first use, like libcurl: a command that draws no image does not load them.
        .target(name: "CImageDecode", dependencies: ["CLibraryLoader"]),

        // The canonical form of a JSON text in one pass (C: every stored document goes through it).
        .target(name: "CStrataJSON"),

        // JSON values: a canonical, number-preserving parser and RFC 6902 diffs with old values.
        .target(name: "StrataJSON", dependencies: ["CStrataJSON"], swiftSettings: engineSettings),

        // Thin Swift wrapper over LMDB: environment, transactions, databases, cursors, StorageError.
        .target(name: "LMDB", dependencies: ["CLMDB"], swiftSettings: engineSettings),

        // Domain-agnostic engine: the event log, blobs, projections, checkpoints, time travel.
        .target(
            name: "EventStore",
            dependencies: [
                "LMDB", "CZstd", "StrataJSON",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: engineSettings
        ),

        // Data layer: the libcurl HTTP client, source definitions, the fetch pipeline and the
        // projections that fold fetched pages into items.
        // Every child process (git, `--exec` alerts, bisect's command, $EDITOR, the pager, the
        // demo), through swift-subprocess.
        .target(
            name: "ChildProcess", dependencies: [.product(name: "Subprocess", package: "swift-subprocess")], swiftSettings: strictSettings),

        .target(
            name: "StrataData",
            dependencies: [
                "EventStore", "LMDB", "CCurl", "CSQLite", "CZlib", "CZstd", "CBrotli", "ChildProcess",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),

        // Domain: Item, ItemVersion, Change, Source, FetchRun; the ports (repository protocols) its
        // use cases need, in its own terms; typed problems. It knows JSON values and nothing else.
        .target(name: "StrataDomain", dependencies: ["StrataJSON"], swiftSettings: strictSettings),

        // Adapters: the Domain's ports over what backs them, one folder per backing (LMDB for the
        // store, Curl for the network, Postgres for the team log, SQLite for exports, Subprocess
        // for child processes, Files for snapshot imports), and the Entity → Domain mappers.
        .target(
            name: "StrataAdapters",
            dependencies: [
                "StrataDomain", "StrataData", "StrataJSON", "EventStore", "TeamLog", "ChildProcess", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),

        // Presentation: ViewData, MVVM view models, terminal renderers (text measured in terminal
        // cells by TerminalUI). No storage, no CLI parsing.
        .target(name: "StrataPresentation", dependencies: ["StrataDomain", "StrataJSON", "TerminalUI"], swiftSettings: strictSettings),

        // A terminal UI toolkit: cells, styles, a diffing frame encoder, an input decoder and the
        // terminal session (raw mode, alternate screen, signals). Knows nothing of Strata.
        .target(name: "CTextWidth"),  // wcwidth under C.UTF-8 (C: glibc declares it for XOPEN only)
        .target(name: "TerminalUI", dependencies: ["CTextWidth"], swiftSettings: strictSettings),

        // The browser's screens (views over Presentation's view models, rendered with TerminalUI)
        // and its run loop over a terminal session.
        .target(name: "StrataBrowser", dependencies: ["TerminalUI", "StrataPresentation", "StrataDomain"], swiftSettings: strictSettings),

        // `strata serve`: the mirrored API as it was at any point, over HTTP (Hummingbird), through
        // the app's use cases; read-only.
        // The web UI's pages: the same domain models as HTML, through templates that escape by
        // default, with its stylesheet and script. Knows no HTTP.
        .target(
            name: "StrataWeb",
            dependencies: ["StrataDomain", "StrataPresentation", "StrataJSON", .product(name: "Mustache", package: "swift-mustache")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "StrataServer",
            dependencies: ["StrataDomain", "StrataPresentation", "StrataJSON", "StrataWeb",
                           .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
                           .product(name: "UnixSignals", package: "swift-service-lifecycle")],
            swiftSettings: strictSettings
        ),

        // The team log: one shared history on PostgreSQL that stores push to and pull from
        // (postgres-nio; its own target, so the rest builds without it).
        .target(
            name: "TeamLog",
            dependencies: ["EventStore", .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),

        // Terminal thumbnails: decoded images drawn as symbols by chafa.
        .target(name: "TerminalImages", dependencies: ["CImageDecode"], swiftSettings: strictSettings),

        // The composition root: Swinject assemblies for Data, Domain and Presentation; the one
        // place that opens a store (StoreAccess), and the adapters behind the store tools, the
        // team log and the benchmarks.
        .target(
            name: "StrataApp",
            dependencies: [
                "StrataData", "StrataDomain", "StrataAdapters", "StrataPresentation", "TerminalImages", "EventStore", "LMDB", "TeamLog", "ChildProcess",
                .product(name: "Swinject", package: "Swinject"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),

        // A fixture API server (Hummingbird) with ETag/304, paging, images and per-route faults.
        .target(
            name: "FixtureServer",
            dependencies: [
                "StrataJSON",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // The lab: benchmarks that need the fixture server in-process, the browser's view driven
        // without a terminal, or a scratch PostgreSQL database whose tables it drops.
        .executableTarget(
            name: "strata-lab",
            dependencies: [
                "StrataApp", "StrataData", "StrataPresentation", "StrataBrowser", "TerminalUI", "EventStore", "TeamLog", "FixtureServer", "StrataJSON",
                .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
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
                "CLibraryLoader", "StrataJSON", "StrataDomain", "StrataPresentation", "StrataApp", "FixtureServer",
                "StrataBrowser", "TerminalUI", "TerminalImages", "StrataServer", "ChildProcess",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),

        // Helpers shared by the test targets (fixtures, temp stores, the fixture server): a target,
        // not a product.
        .target(name: "TestScratch", path: "Tests/TestScratch", swiftSettings: strictSettings),
        .target(name: "CTestSpawn", path: "Tests/CTestSpawn"),  // closefrom for spawned test helpers (C: not imported by Glibc)
        .target(
            name: "StrataTestSupport",
            dependencies: ["TestScratch", "EventStore", "StrataData", "FixtureServer", "CTestSpawn", .product(name: "Logging", package: "swift-log")],
            path: "Tests/StrataTestSupport",
            swiftSettings: strictSettings
        ),
        // The child processes of the crash and concurrency tests (`append-loop`, `hold-read`).
        .executableTarget(
            name: "strata-test-aid",
            dependencies: ["StrataApp", "EventStore", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Tests/StrataTestAid",
            swiftSettings: strictSettings
        ),
        .testTarget(name: "TerminalUITests", dependencies: ["TerminalUI"], swiftSettings: strictSettings),
        .testTarget(name: "ChildProcessTests", dependencies: ["ChildProcess"], swiftSettings: strictSettings),
        .testTarget(name: "StrataJSONTests", dependencies: ["StrataJSON", "EventStore"], swiftSettings: strictSettings),
        .testTarget(name: "StrataWebTests", dependencies: ["StrataWeb", "StrataDomain", "StrataJSON"], swiftSettings: strictSettings),
        .testTarget(name: "StrataBrowserTests", dependencies: ["TestScratch", "StrataBrowser", "TerminalUI", "StrataPresentation", "StrataDomain", "StrataJSON"],
                    exclude: ["Goldens"], swiftSettings: strictSettings),
        .testTarget(name: "LMDBTests", dependencies: ["TestScratch", "LMDB"], swiftSettings: strictSettings),
        .testTarget(name: "TeamLogTests", dependencies: ["TestScratch", "TeamLog", "EventStore", "StrataTestSupport", "StrataData", "FixtureServer"],
                    swiftSettings: strictSettings),
        .testTarget(name: "EventStoreTests", dependencies: ["TestScratch", "EventStore", "LMDB", .product(name: "Logging", package: "swift-log")], swiftSettings: strictSettings),
        .testTarget(
            name: "StrataDataTests",
            dependencies: ["StrataTestSupport", "TestScratch", "StrataData", "EventStore", "FixtureServer", "CLibraryLoader", "CZstd"],
            swiftSettings: strictSettings
        ),
        .testTarget(name: "StrataDomainTests", dependencies: ["StrataTestSupport", "StrataDomain", "StrataAdapters", "StrataData", "EventStore", "FixtureServer"], swiftSettings: strictSettings),
        .testTarget(name: "StrataPresentationTests", dependencies: ["TestScratch", "StrataPresentation", "StrataDomain", "StrataData", "StrataJSON", "TerminalUI"],
                    exclude: ["Goldens"], swiftSettings: strictSettings),  // read at run time by path
        .testTarget(
            name: "StrataAppTests",
            dependencies: [
                "StrataTestSupport", "StrataApp", "StrataDomain", "StrataAdapters", "StrataPresentation", "TerminalImages", "EventStore", "StrataData", "FixtureServer", "ChildProcess",
                .product(name: "Swinject", package: "Swinject")
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataServerTests",
            dependencies: ["StrataTestSupport", "StrataServer", "StrataApp", "StrataDomain", "StrataData", "StrataJSON", "EventStore", "FixtureServer"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataCLITests",
            dependencies: [
                "StrataTestSupport", "TestScratch", "CTestSpawn", "strata", "strata-test-aid", "EventStore", "LMDB", "FixtureServer", "StrataJSON",
                "StrataDomain", "StrataPresentation", "StrataServer",
                // The WARC reader written to the spec in the tests: gzip members and SHA-1 payload digests.
                "CZlib", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
