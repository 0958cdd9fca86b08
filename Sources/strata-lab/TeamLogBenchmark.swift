import EventStore
import Foundation
import Logging
import PostgresNIO
import StrataApp
import StrataJSON
import TeamLog

/// `strata-lab bench teamlog`: the store's events pushed to a team log (`--pg-url`, emptied first) in
/// batches of `--batch`, and pulled into a new store, beside the floor: the same rows written by
/// plain `INSERT … SELECT * FROM unnest(…)` with postgres-nio (bodies already compressed, seqs
/// and hashes already computed, no Strata logic), and read back by one `SELECT` in seq order.
/// Five runs; medians.
enum TeamLogBenchmark {
    static func run(store s: EventStore, url: String, batch: Int, result: inout [String: JSONValue]) async throws {
        var quiet = Logger(label: "bench")
        quiet.logLevel = .critical
        let location = try TeamLogLocation(url: url)
        let floor = try TeamLogFloor(url: url, logger: quiet)
        defer { floor.close() }
        let events = try await s.events(EventQuery())
        var bodies: [[UInt8]: [UInt8]] = [:]
        for e in events { if let p = e.payload, bodies[p.hash] == nil { bodies[p.hash] = PortableBody.encode(try await s.payload(of: e) ?? []) } }
        let bodyBytes = bodies.values.reduce(0) { $0 + $1.count }
        let clock = ContinuousClock()
        var push: [Double] = [], pull: [Double] = [], floorPush: [Double] = [], floorPull: [Double] = []
        for _ in 0..<5 {
            try await floor.reset()
            // A new team log each run: it makes its tables anew on the emptied database.
            let log = try PostgresTeamLog(location: location, logger: quiet)
            var start = clock.now
            let pushed = try await log.push(from: s, node: "bench", batch: batch)
            push.append(seconds(clock.now - start))
            precondition(pushed.appended == events.count)
            let target = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-pull-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: target) }
            var options = StoreOptions()
            options.logger = quiet
            let into = try await EventStore.open(at: target, projections: StoreAccess.projections, options: options)
            start = clock.now
            let pulled = try await log.pull(into: into, after: 0, batch: batch)
            pull.append(seconds(clock.now - start))
            precondition(pulled.appended == events.count)
            await log.close()
            // The floor: the same rows, no Strata logic.
            try await floor.reset(floorOnly: true)
            start = clock.now
            try await floor.insert(events, bodies: bodies, batch: batch)
            floorPush.append(seconds(clock.now - start))
            start = clock.now
            let read = try await floor.read()
            floorPull.append(seconds(clock.now - start))
            precondition(read == events.count)
        }
        func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
        let (p, f, q, g) = (median(push), median(floorPush), median(pull), median(floorPull))
        result["teamLogEvents"] = .int(events.count)
        result["teamLogBodyMiB"] = .double(Double(bodyBytes) / 1_048_576)
        result["pushEventsPerSecond"] = .int(Int(Double(events.count) / p))
        result["pushFloorEventsPerSecond"] = .int(Int(Double(events.count) / f))
        result["pushRatio"] = .double(f / p)
        result["pushBodyMBPerSecond"] = .double(Double(bodyBytes) / p / 1e6)
        result["pullEventsPerSecond"] = .int(Int(Double(events.count) / q))
        result["pullFloorEventsPerSecond"] = .int(Int(Double(events.count) / g))
        result["pullRatio"] = .double(g / q)
        result["pullBodyMBPerSecond"] = .double(Double(bodyBytes) / q / 1e6)
    }

}
