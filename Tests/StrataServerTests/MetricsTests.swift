import FixtureServer
import Foundation
import StrataApp
import StrataDomain
import StrataTestSupport
import Testing

/// `GET /metrics` in the Prometheus text format (version 0.0.4), read line by line.
@Suite struct MetricsTests {
    /// Samples by series (`name{labels}`), after checking every line's shape and that each
    /// sample's family was declared by a `# TYPE` line before it.
    static func parse(_ text: String) throws -> [String: Double] {
        var samples: [String: Double] = [:]
        var types: [String: String] = [:]
        let sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*\})? (\S+)$/
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            if line.hasPrefix("# HELP ") { continue }
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                #expect(parts.count == 4 && ["counter", "gauge", "histogram", "summary", "untyped"].contains(String(parts[3])), "\(line)")
                types[String(parts[2])] = String(parts[3])
                continue
            }
            let m = try #require(try sample.wholeMatch(in: String(line)), "not a sample line: \(line)")
            let name = String(m.1)
            let family = ["_bucket", "_sum", "_count"].reduce(name) { n, suffix in types[n] == nil && n.hasSuffix(suffix) ? String(n.dropLast(suffix.count)) : n
            }
            #expect(types[family] != nil, "\(name) before its # TYPE")
            guard let value = Double(String(m.3)) else {
                Issue.record("not a number: \(line)")
                continue
            }
            samples[name + (m.2.map(String.init) ?? "")] = value
        }
        return samples
    }

    @Test func theStoresGaugesAreReadAtEachScrape() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            let metrics = StrataMetrics()
            metrics.fetched(source: "cars", outcome: "ok", seconds: 0.2, events: 7)
            metrics.fetched(source: "cars", outcome: "failed", seconds: 0, events: 0)
            metrics.notified(alert: "cars/cheaper", outcome: .delivered(status: 200), willRetry: false)
            metrics.notified(alert: "cars/cheaper", outcome: .retry("503", status: 503), willRetry: true)
            metrics.notified(alert: "cars/cheaper", outcome: .refused("410", status: 410), willRetry: false)
            try await s.serving(metrics: metrics) { (base: String) async throws in
                let r = try await s.get(base, "/metrics")
                #expect(r.status == 200 && r.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
                let m = try Self.parse(r.text)
                #expect(m["strata_store_head_seq"] == Double(s.passes.last!))
                #expect(m["strata_outbox_pending"] == 0)
                #expect((m["strata_source_last_success_timestamp_seconds{source=\"cars\"}"] ?? 0) > 0)
                #expect(m["strata_projection_lag_events{projection=\"items\"}"] == 0)
                #expect(m["strata_fetch_total{source=\"cars\",outcome=\"ok\"}"] == 1 && m["strata_fetch_total{source=\"cars\",outcome=\"failed\"}"] == 1)
                #expect(m["strata_events_appended_total"] == 7)
                #expect(m["strata_fetch_duration_seconds_count{source=\"cars\"}"] == 2)
                #expect(m["strata_metrics_read_errors"] == 0)
                for outcome in ["delivered", "retry", "failed"] {
                    #expect(m["strata_notifications_total{alert=\"cars/cheaper\",outcome=\"\(outcome)\"}"] == 1, "\(outcome)")
                }
                // The next scrape reads the store again: a new event moves the head.
                _ = try await s.app.useCases.maintenance.record(NewLogEntry(id: nil, type: "NoteRecorded", stream: "notes", payload: nil))
                #expect(try Self.parse(try await s.get(base, "/metrics").text)["strata_store_head_seq"] == Double(s.passes.last! + 1))
            }
            // Metrics alone (`watch --metrics-port`): the read side is not served.
            try await s.serving(metrics: metrics, readSide: false) { (base: String) async throws in
                #expect(try await s.get(base, "/metrics").status == 200)
                #expect(try await s.get(base, "/_strata/sources").status == 404)
            }
        }
    }
}
