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
public func makeStore(clock: (any EventClock)? = nil, mapSize: Int = 256 << 20) async throws -> EventStore {
    var o = StoreOptions()
    o.durability = .noSync
    o.mapSize = mapSize
    o.logger.logLevel = .critical
    if let clock { o.clock = clock }
    let dir = TestScratch.path("store")
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
