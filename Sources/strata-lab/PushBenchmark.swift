import EventStore
import FixtureServer
import Foundation
import StrataApp
import Logging
import StrataData
import StrataJSON

/// `strata-lab bench push`: N local creates pushed to the fixture API (in this process, on
/// 127.0.0.1) through the real push path (events before and after every round, libcurl,
/// idempotency keys), at concurrency 1 and at `concurrency`; beside the floor: the same N POSTs
/// sent by the same HTTP client with nothing recorded.
enum PushBenchmark {
    static func run(store s: EventStore, writes n: Int, concurrency: Int, result: inout [String: JSONValue]) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("strata-push-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/bench", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        for list in ["notes", "floor"] { try Data("{}".utf8).write(to: URL(fileURLWithPath: "\(root)/bench/\(list).json")) }
        let server = FixtureServer(root: root)
        try await server.start()
        defer { Task { await server.stop() } }
        let b = server.baseURL
        let source = SourceDefinition(name: "bench", url: b + "/bench/notes", id: ["@key"], title: "content")
        var writable = source
        writable.createURL = b + "/bench/notes"
        try await SourceCatalog(store: s).define(writable)
        var quiet = Logger(label: "bench")
        quiet.logLevel = .critical
        let client = CurlHTTPClient()
        let pusher = Pusher(store: s, client: client, logger: quiet)
        let writes = LocalWrites(store: s)
        func doc(_ i: Int) -> JSONValue {
            .object(["content": .string("bench note \(i)"), "created_by": .string("bench"), "create_date": .string("2026-11-25T10:00:00Z")])
        }
        let clock = ContinuousClock()
        for c in Set([1, concurrency]).sorted() {
            _ = try await writes.create(source: "bench", documents: (0..<n).map(doc), user: "bench")
            var options = PushOptions()
            options.concurrency = c
            let start = clock.now
            let summary = try await pusher.push(writable, options: options)
            let elapsed = seconds(clock.now - start)
            guard summary.count(.acknowledged) == n else {
                throw BenchmarkError(
                    "the push benchmark failed: \(summary.count(.acknowledged)) of \(n) acknowledged (\(summary.outcomes.first { $0.result != .acknowledged }?.message ?? ""))"
                )
            }
            result["pushC\(c)WritesPerSecond"] = .int(Int(Double(n) / elapsed))
            // The floor: the same POSTs, nothing recorded.
            let requests = (0..<n).map { i in
                HTTPRequest(
                    url: b + "/bench/floor", method: "POST", body: doc(i).canonicalBytes,
                    headers: [("Content-Type", "application/json"), ("Idempotency-Key", "floor-\(c)-\(i)")])
            }
            let floorStart = clock.now
            let transfers = client.transfers(requests, concurrency: c)
            var done = 0
            for await batch in transfers { done += batch.count }
            let floorElapsed = seconds(clock.now - floorStart)
            guard done == n else { throw BenchmarkError("the push floor answered \(done) of \(n)") }
            result["floorC\(c)WritesPerSecond"] = .int(Int(Double(n) / floorElapsed))
            result["pushC\(c)OverFloor"] = .double((elapsed / floorElapsed * 100).rounded() / 100)
        }
        result["writes"] = .int(n)
        result["concurrency"] = .int(concurrency)
        result["eventsPerWrite"] = .int(3)  // the write, WriteSent, WriteAcknowledged
    }
}
