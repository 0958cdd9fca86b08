import Foundation

/// A client's traffic through Strata: each request forwarded to the API it was meant for,
/// answered with what came back, and recorded as an exchange of a recorded source
/// (`strata proxy`, and `strata serve --on-miss proxy`).
package struct RecordTraffic: Sendable {
    let traffic: any TrafficRepository
    let upstream: any UpstreamClient
    let lease: LeaseSourceForWrite

    package init(traffic: any TrafficRepository, upstream: any UpstreamClient, lease: LeaseSourceForWrite = .none) {
        self.traffic = traffic
        self.upstream = upstream
        self.lease = lease
    }

    /// Starts recording into `source` (made a recorded source if new) what is forwarded to
    /// `upstream`; `redacting` names headers to keep out of the log besides the credentials.
    /// - Throws: ``RepositoryError`` `invalidQuery` when `source` is a list source.
    /// `timeout`: seconds an upstream exchange may take (nil: 60).
    package func start(source: String, upstream base: String, redacting: [String], timeout: Double? = nil) async throws -> TrafficRecorder {
        try await lease(source)
        try await traffic.prepareRecordedSource(source, upstream: base)
        return TrafficRecorder(traffic: traffic, upstream: upstream, source: source, base: base, redacting: redacting, timeout: timeout)
    }
}

/// One recording: forwards requests and appends their exchanges in the background, as many per
/// transaction as arrived meanwhile, so an answer never waits for the disk.
package actor TrafficRecorder {
    let traffic: any TrafficRepository
    nonisolated let upstream: any UpstreamClient
    package nonisolated let source: String
    package nonisolated let base: String
    let redacting: [String]
    nonisolated let timeout: Double?
    private var pending: [Exchange] = []
    private var writer: Task<Void, Never>?
    /// Exchanges appended so far, and the appends that failed (with why).
    package private(set) var recorded = 0
    package private(set) var failures: [String] = []

    init(traffic: any TrafficRepository, upstream: any UpstreamClient, source: String, base: String, redacting: [String], timeout: Double?) {
        self.traffic = traffic
        self.upstream = upstream
        self.source = source
        self.base = base
        self.redacting = redacting
        self.timeout = timeout
    }

    /// Forwards `request` and queues its exchange (a failure too) for the log.
    package nonisolated func forward(_ request: ForwardRequest) async -> Exchange {
        var request = request
        if request.timeout == nil { request.timeout = timeout }
        let x = await upstream.forward(request, to: base, startedAt: Date())
        await enqueue(x)
        return x
    }

    /// Queues an exchange for the log, in the order calls arrive.
    package func enqueue(_ x: Exchange) {
        pending.append(x)
        if writer == nil { writer = Task { await self.drain() } }
    }

    private func drain() async {
        while !pending.isEmpty {
            let batch = pending
            pending.removeAll()
            do {
                recorded += try await traffic.record(batch, source: source, redacting: redacting)
            } catch {
                failures.append("\(batch.count) exchanges were not recorded: \(error)")
            }
        }
        writer = nil
    }

    /// Waits until every queued exchange is in the log (or failed).
    package func flush() async {
        while let w = writer { await w.value }
    }
}

/// HAR and WARC files into recorded sources.
package struct ImportTraffic: Sendable {
    let traffic: any TrafficRepository
    let lease: LeaseSourceForWrite

    package init(traffic: any TrafficRepository, lease: LeaseSourceForWrite = .none) {
        self.traffic = traffic
        self.lease = lease
    }

    /// Imports `path` into `source` (made a recorded source if new); `progress` gets the bytes
    /// of the file read so far.
    /// - Throws: ``RepositoryError`` `notFound` for a missing file, `invalidQuery` for one that
    ///   is not HAR or WARC, `invalidQuery` when `source` is a list source.
    package func callAsFunction(
        _ format: TrafficFormat, path: String, into source: String, redacting: [String] = [], progress: (@Sendable (Int64) -> Void)? = nil
    ) async throws -> TrafficImport {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw RepositoryError(.notFound, "cannot read \(path); check the path")
        }
        try await lease(source)
        try await traffic.prepareRecordedSource(source, upstream: nil)
        return try await traffic.importFile(format, path: path, source: source, redacting: redacting, progress: progress)
    }
}

/// Any source's exchanges (recorded, or fetched pages, details and images) out as HAR or WARC.
package struct ExportTraffic: Sendable {
    let traffic: any TrafficRepository
    let log: any EventLogRepository

    package init(traffic: any TrafficRepository, log: any EventLogRepository) {
        self.traffic = traffic
        self.log = log
    }

    /// - Throws: ``RepositoryError`` `notFound` for a source with no events.
    package func callAsFunction(_ source: String, format: TrafficFormat, to path: String, at point: PointInTime = .now) async throws -> TrafficExport {
        guard try await traffic.hasEvents(source: source) else {
            throw RepositoryError(.notFound, "no source named \(source) has anything recorded", next: .listSources)
        }
        let seq = try await log.resolve(point)
        return try await traffic.exportFile(format, path: path, source: source, through: seq)
    }
}
