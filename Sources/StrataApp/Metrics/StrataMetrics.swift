import Foundation
import Prometheus
package import StrataDomain

/// Strata's metrics in the Prometheus text format (swift-prometheus), for `GET /metrics` on
/// `strata serve` and on `strata watch --metrics-port`. Counters of this process's fetches are
/// kept as they happen; the store's gauges are read at each scrape, so any process's work shows.
package final class StrataMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()

    package init() {}

    // Computed: MetricNameDescriptor is not Sendable, so it cannot be a stored static.
    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: metric, unitName: unit, helpText: help)
    }

    private static var fetches: MetricNameDescriptor {
        name("strata_fetch", "total", "Fetches of a source by this process, by outcome (ok, failed, leased-elsewhere).")
    }
    private static var duration: MetricNameDescriptor { name("strata_fetch_duration", "seconds", "How long this process's fetches took.") }
    private static var appended: MetricNameDescriptor { name("strata_events_appended", "total", "Events this process's fetches appended to the log.") }
    private static var head: MetricNameDescriptor { name("strata_store_head", "seq", "The seq of the log's last event.") }
    private static var lag: MetricNameDescriptor { name("strata_projection_lag", "events", "Events a projection has still to fold.") }
    private static var outbox: MetricNameDescriptor { name("strata_outbox", "pending", "Local writes not yet acknowledged by the API.") }
    private static var lastSuccess: MetricNameDescriptor {
        name("strata_source_last_success_timestamp", "seconds", "When a source's list was last fetched completely (Unix time; 0: never).")
    }
    private static var notifications: MetricNameDescriptor {
        name("strata_notifications", "total", "Delivery attempts of alert notifications by this process, by outcome (delivered, retry, failed).")
    }
    private static var readErrors: MetricNameDescriptor { name("strata_metrics_read", "errors", "1 when the last scrape could not read the store, else 0.") }
    private static let buckets: [Duration] = [
        .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2_500),
        .seconds(5), .seconds(10), .seconds(30), .seconds(60)
    ]

    /// One fetch of `source` by this process: `ok`, `failed` or `leased-elsewhere`, how long it
    /// took and how many events it appended.
    package func fetched(source: String, outcome: String, seconds: Double, events: Int) {
        registry.makeCounter(descriptor: Self.fetches, labels: [("source", source), ("outcome", outcome)]).increment()
        registry.makeDurationHistogram(descriptor: Self.duration, labels: [("source", source)], buckets: Self.buckets)
            .record(.milliseconds(Int64((seconds * 1000).rounded())))
        registry.makeCounter(descriptor: Self.appended).increment(by: Int64(events))
    }

    /// One delivery attempt of a notification of `alert` (`SOURCE/NAME`).
    package func notified(alert: String, outcome: DeliveryOutcome, willRetry: Bool) {
        let label =
            switch outcome {
            case .delivered: "delivered"
            case .retry, .refused: willRetry ? "retry" : "failed"
            }
        registry.makeCounter(descriptor: Self.notifications, labels: [("alert", alert), ("outcome", label)]).increment()
    }

    /// The exposition, the store's gauges read now through the app's use cases; per-source
    /// gauges for `sources` only (every source when empty).
    package func exposition(_ useCases: UseCases, sources shown: [String] = []) async -> String {
        do {
            let seq = try await useCases.replay.resolve(.now)
            registry.makeGauge(descriptor: Self.head).set(to: Double(seq))
            for p in try await useCases.maintenance.statistics().projections {
                registry.makeGauge(descriptor: Self.lag, labels: [("projection", p.name)]).set(to: Double(p.lag))
            }
            let pending = try await useCases.push.outbox(source: nil, all: false).count
            registry.makeGauge(descriptor: Self.outbox).set(to: Double(pending))
            for s in try await useCases.sources.sources() where shown.isEmpty || shown.contains(s.name) {
                let at = s.lastSuccess?.at.timeIntervalSince1970 ?? 0
                registry.makeGauge(descriptor: Self.lastSuccess, labels: [("source", s.name)]).set(to: at)
            }
            registry.makeGauge(descriptor: Self.readErrors).set(to: 0)
        } catch {
            // A scrape still answers: the counters are this process's; the error is a gauge.
            registry.makeGauge(descriptor: Self.readErrors).set(to: 1)
        }
        // Every counter is there from the first scrape, at 0 until something happens.
        registry.makeCounter(descriptor: Self.appended).increment(by: Int64(0))
        var buffer: [UInt8] = []
        buffer.reserveCapacity(4_096)
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
