package import Foundation

/// Recorded traffic: exchanges in, HAR and WARC files in and out, and where recordings changed.
package protocol TrafficRepository: Sendable {
    /// Makes `source` a recorded source (no list, no details) when it does not exist yet.
    /// - Throws: ``RepositoryError`` `invalidQuery` when `source` is a list source.
    func prepareRecordedSource(_ source: String, upstream: String?) async throws
    /// Appends `exchanges` to `source` in one transaction, the credential headers (and
    /// `redacting`) replaced by keyed digests first. Returns how many were new.
    func record(_ exchanges: [Exchange], source: String, redacting: [String]) async throws -> Int
    func importFile(
        _ format: TrafficFormat, path: String, source: String, redacting: [String], progress: (@Sendable (Int64) -> Void)?
    ) async throws -> TrafficImport
    /// Writes `source`'s exchanges up to `seq` (its fetched pages, details and images included).
    func exportFile(_ format: TrafficFormat, path: String, source: String, through seq: UInt64) async throws -> TrafficExport
    /// Whether `source` has any event in the log (a defined source, or a stream someone recorded).
    func hasEvents(source: String) async throws -> Bool
    /// The points in `after+1 ... through` where what `sources` (all when empty) recorded changed.
    func changePoints(sources: [String], after: UInt64, through: UInt64) async throws -> [ChangePoint]
    /// The recorded answers of `sources` (all when empty) that changed in `after+1 ... through`.
    func responseChanges(sources: [String], after: UInt64, through: UInt64) async throws -> [ResponseChange]
}

/// Forwards a client's request to the API it was meant for.
package protocol UpstreamClient: Sendable {
    /// The exchange `request` made with `upstream` (a base URL): the answer, whatever its
    /// status, or a failure when no complete answer came. Never throws.
    func forward(_ request: ForwardRequest, to upstream: String, startedAt: Date) async -> Exchange
}
