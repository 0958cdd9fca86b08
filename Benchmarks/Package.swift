// swift-tools-version: 6.1
// Strata's benchmarks: a package of their own, so `make test` never builds their dependencies.
import PackageDescription

let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Strata", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // The floor: the same ingest written directly against LMDB in C.
        .target(name: "LMDBFloor", linkerSettings: [.linkedLibrary("lmdb")]),
        // The fetch floor: libcurl multi in C over the same URLs.
        .target(name: "CurlFloor", linkerSettings: [.linkedLibrary("curl")]),
        .executableTarget(
            name: "FetchBenchmarks",
            dependencies: [
                "CurlFloor",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "EventStore", package: "Strata"),
                .product(name: "StrataData", package: "Strata"),
                .product(name: "FixtureServer", package: "Strata"),
            ],
            path: "Benchmarks/FetchBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "IngestBenchmarks",
            dependencies: [
                "LMDBFloor",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "EventStore", package: "Strata"),
                .product(name: "FixtureServer", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Benchmarks/IngestBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
