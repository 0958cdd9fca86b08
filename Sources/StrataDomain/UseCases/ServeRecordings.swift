/// The API as Strata recorded it, URL by URL, at any point of the log: what `strata serve`
/// answers a client with.
package struct ServeRecordings: Sendable {
    let recordings: any RecordingRepository
    let log: any EventLogRepository
    /// The sources whose recordings answer (all when empty): with several sources recording one
    /// request, the newest recording among these answers, not the newest of all.
    package private(set) var sources: Set<String> = []

    package init(recordings: any RecordingRepository, log: any EventLogRepository) {
        self.recordings = recordings
        self.log = log
    }

    /// The same, answering only from `sources` (all when empty).
    package func restricted(to sources: some Sequence<String>) -> ServeRecordings {
        var copy = self
        copy.sources = Set(sources)
        return copy
    }

    /// The recording of `target` (path and query) in force at `point`.
    /// - Throws: ``RepositoryError`` `invalidQuery` for a seq after the head.
    package func callAsFunction(target: String, host: String?, at point: PointInTime) async throws -> RecordingLookup {
        try await recordings.recording(target: target, host: host, at: point, sources: sources)
    }

    /// The recording in force at `seq`.
    package func recording(target: String, host: String?, at seq: UInt64) async throws -> RecordingLookup {
        try await recordings.recording(target: target, host: host, at: .seq(seq), sources: sources)
    }

    /// The first recording of `target` after `seq` (a replay's next answer).
    package func recording(target: String, host: String?, after seq: UInt64) async throws -> RecordingLookup {
        try await recordings.recording(target: target, host: host, after: seq, sources: sources)
    }

    /// The end of the next fetch run after `seq`, if any.
    package func nextRun(after seq: UInt64) async throws -> UInt64? { try await recordings.runEnd(after: seq) }

    /// What a request is recorded under: its target for a GET without a body, else the method,
    /// the target and the body's digest.
    package func requestKey(method: String, target: String, body: [UInt8]?) -> String {
        recordings.requestKey(method: method, target: target, body: body)
    }

    /// The keys of a request whose body was recorded redacted: its body as each source that
    /// redacts JSON paths would have stored it (a redacted request body is recorded, and so
    /// keyed, by its redacted bytes). None when no source redacts it or sources are unreadable.
    package func redactedKeys(method: String, target: String, body: [UInt8]?, headers: [(name: String, value: String)]) async -> [String] {
        guard let body, !body.isEmpty, let redacted = try? await recordings.redactedRequestBodies(body, headers: headers) else { return [] }
        return redacted.map { requestKey(method: method, target: target, body: $0) }
    }

    /// A request body's SHA-256, lower-case hex.
    package func bodyDigest(_ body: [UInt8]) -> String { recordings.bodyDigest(body) }

    /// The seq a point stands for.
    package func resolve(_ point: PointInTime) async throws -> UInt64 { try await log.resolve(point) }
}
