import FixtureServer
import Foundation

/// The repository's fixtures directory, found from this source file.
let fixturesRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        let candidate = url.appendingPathComponent("fixtures/cars")
        if FileManager.default.fileExists(atPath: candidate.path) { return url.appendingPathComponent("fixtures").path }
    }
    return "fixtures"
}()

/// Starts a fixture server on an ephemeral loopback port for the duration of `body`.
func withFixtureServer<T>(version: Int = 1, _ body: (FixtureServer) async throws -> T) async throws -> T {
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
