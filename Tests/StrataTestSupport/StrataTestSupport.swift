public import EventStore
public import FixtureServer
import Foundation
public import Logging
import StrataData
import TestScratch

/// The repository's fixtures directory, found from this source file.
public let fixturesRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("fixtures/cars").path) { return url.appendingPathComponent("fixtures").path }
    }
    return "fixtures"
}()

/// A fixture file's bytes.
public func fixture(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixturesRoot + "/" + path)))
}

/// A real store in a new temp directory with Strata's projections (no fsync: tests only).
/// - Parameter clock: events' times; a `SteppingClock` makes dates repeatable.
/// - Parameter key: a key makes the store encrypted.
public func makeStore(clock: (any EventClock)? = nil, mapSize: Int = 256 << 20, key: StoreKey? = nil, at directory: String? = nil) async throws -> EventStore {
    let dir = directory ?? TestScratch.path("store")
    var o = StoreOptions()
    o.key = key
    o.durability = .noSync
    o.mapSize = mapSize
    o.logger.logLevel = .critical
    if let clock { o.clock = clock }
    return try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()] + DataProjections.all, options: o)
}

/// Starts a fixture server on an ephemeral loopback port for the duration of `body`.
public func withFixtureServer<T>(version: Int = 1, _ body: (FixtureServer) async throws -> T) async throws -> T {
    let server = FixtureServer(root: fixturesRoot, version: version)
    try await server.start()
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// A logger that stays silent in tests.
public func quietLogger() -> Logger {
    var l = Logger(label: "test")
    l.logLevel = .critical
    return l
}

/// Finds plaintext in a file: every 16-byte window of the needles that occurs in it.
public struct PlaintextScan {
    private struct Window: Hashable { var a: UInt64; var b: UInt64 }
    private var windows: [Window: Int] = [:]
    private var names: [String] = []

    public init() {}

    /// Adds the 16-byte windows of `bytes` (named `name` in findings), leaving out windows of
    /// fewer than 8 distinct bytes (runs of zeros or spaces occur in any file).
    public mutating func add(_ bytes: [UInt8], name: String) {
        guard bytes.count >= 16 else { return }
        let n = names.count
        names.append(name)
        bytes.withUnsafeBytes { b in
            for i in 0...(b.count - 16) {
                var seen: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
                for j in i..<(i + 16) {
                    let x = b[j], bit = UInt64(1) << UInt64(x & 63)
                    switch x >> 6 {
                    case 0: seen.0 |= bit;
                    case 1: seen.1 |= bit;
                    case 2: seen.2 |= bit;
                    default: seen.3 |= bit
                    }
                }
                guard seen.0.nonzeroBitCount + seen.1.nonzeroBitCount + seen.2.nonzeroBitCount + seen.3.nonzeroBitCount >= 8 else { continue }
                windows[Window(a: b.loadUnaligned(fromByteOffset: i, as: UInt64.self), b: b.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self))] = n
            }
        }
    }

    public var windowCount: Int { windows.count }

    /// The names of the needles with a window in `file`.
    public func findings(in file: [UInt8]) -> [String] {
        guard file.count >= 16 else { return [] }
        var found = Set<Int>()
        file.withUnsafeBytes { b in
            for i in 0...(b.count - 16) {
                if let n = windows[Window(a: b.loadUnaligned(fromByteOffset: i, as: UInt64.self), b: b.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self))] {
                    found.insert(n)
                }
            }
        }
        return found.map { names[$0] }.sorted()
    }
}
