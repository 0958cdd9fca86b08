public import EventStore
import Foundation
import LMDB

/// Every response Strata recorded, by the URL it answered, for serving the API as it was
/// (`strata serve`): list pages, details, images, their 304 revalidations and the failures.
///
/// Table `by-url`: `target 0x00 host 0x00 seq(u64be)` → `kind(u8) recordedAt(i64be µs)`, where
/// `target` is the URL's path and query (`/cars/offers?page=2`), `host` its host and port, and
/// kind `0` a response (its event holds the body, or references it), `1` a failure
/// (`FetchFailed`). The recording in force at seq S is one seek (the last key ≤ `… S`); its
/// neighbours are the next and previous keys. Table `hosts`: `target 0x00 host` → empty, the
/// hosts a target was fetched from (usually one).
///
/// Recorded exchanges (`ExchangeRecorded`, `ExchangeFailed`: proxied, or imported from HAR and
/// WARC) are indexed under their ``RequestKey`` in place of the target: a GET's is its target,
/// so it shares the history of a fetched page of the same URL; other methods' start with the
/// method (`POST /orders sha256:…`).
///
/// Snapshot imports (no HTTP exchange) are not recordings. A URL whose target and host pass 400
/// bytes is not indexed (LMDB keys stop at 511).
public struct RecordingIndex: Projection {
    public let name = "recordings"
    public let version = 3
    public let tables = ["by-url", "hosts"]
    public let eventTypes: Set<String>? = [
        DataEvents.pageFetched, DataEvents.pageNotModified, DataEvents.detailFetched,
        DataEvents.detailNotModified, DataEvents.imageFetched, DataEvents.fetchFailed,
        TrafficEvents.exchangeRecorded, TrafficEvents.exchangeFailed
    ]

    public init() {}

    public func apply(_ event: RecordedEvent, in context: ProjectionContext) throws {
        let host: String
        let target: String
        if let exchange = TrafficEvents.requestKey(event) {
            (host, target) = exchange
        } else {
            guard event[metadata: "import"] == nil, let url = event[metadata: "url"], let parts = Self.split(url) else { return }
            (host, target) = parts
        }
        guard target.utf8.count + host.utf8.count < 400 else { return }
        // In an encrypted store the target and host are digests (``TableSet/text(_:)``).
        let tables = context.tables
        let prefix = tables.text(target) + [0] + (try tables.text(host, remembering: context.transaction))
        let erased = EventFate.gone.contains(try context.fate(of: event))
        let kind: UInt8 = erased ? 2 : event.type == DataEvents.fetchFailed || event.type == TrafficEvents.exchangeFailed ? 1 : 0
        try context.transaction.put(
            context.tables["by-url"], key: prefix + [0] + event.seq.bigEndianBytes,
            value: [kind] + UInt64(bitPattern: event.recordedAt.microseconds).bigEndianBytes)
        try context.transaction.put(context.tables["hosts"], key: prefix, value: [])
    }

    /// `http://h:8080/a/b?x=1#f` → (`h:8080`, `/a/b?x=1`); nil for a URL without a host.
    public static func split(_ url: String) -> (host: String, target: String)? {
        // A plain absolute URL, every fetched one in practice, is cut without parsing it: this
        // ran for every event a fetch appends.
        if let parts = BaseURL.splitPlain(url) { return parts }
        guard let c = URLComponents(string: url), let host = c.host, !host.isEmpty else { return nil }
        let authority = c.port.map { "\(host):\($0)" } ?? host
        let path = c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath
        return (authority, path + (c.percentEncodedQuery.map { "?" + $0 } ?? ""))
    }

    /// One recording as the index knows it.
    public struct Entry: Sendable, Hashable {
        public var seq: UInt64
        public var isFailure: Bool
        public var recordedAt: Timestamp
        /// Erased by `strata forget`: answered 410, never with a body.
        public var isErased = false
    }

    /// Reads the index inside one snapshot.
    public struct Reader {
        let transaction: Transaction
        let tables: TableSet
        let byURL: Database
        let hosts: Database

        public init(_ snapshot: LogSnapshot) throws {
            transaction = snapshot.transaction
            tables = try snapshot.tables(of: "recordings")
            byURL = tables["by-url"]
            hosts = tables["hosts"]
        }

        /// The hosts `target` was fetched from, in byte order.
        public func hosts(target: String) throws -> [String] {
            let prefix = tables.text(target) + [0]
            let c = try transaction.cursor(hosts)
            var out: [String] = []
            var e = try c.seek(atLeast: prefix)
            while let entry = e, entry.key.starts(with: prefix) {
                out.append(try tables.reveal(UnsafeRawBufferPointer(rebasing: entry.key[prefix.count...]), in: transaction))
                e = try c.next()
            }
            return out
        }

        private func prefix(_ target: String, _ host: String) -> [UInt8] { tables.text(target) + [0] + tables.text(host) + [0] }

        private func entry(_ e: Cursor.Entry?, _ prefix: [UInt8]) -> Entry? {
            guard let e, e.key.count == prefix.count + 8, e.key.starts(with: prefix), e.value.count == 9 else { return nil }
            let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]))
            let micros = Int64(bitPattern: UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.value[1...])))
            return Entry(seq: seq, isFailure: e.value[0] == 1, recordedAt: Timestamp(microseconds: micros), isErased: e.value[0] == 2)
        }

        /// The recording in force at `seq`: the last one at or before it.
        public func recording(target: String, host: String, atMost seq: UInt64) throws -> Entry? {
            let p = prefix(target, host)
            return entry(try transaction.cursor(byURL).seek(atMost: p + seq.bigEndianBytes), p)
        }

        /// The first recording after `seq`.
        public func recording(target: String, host: String, after seq: UInt64) throws -> Entry? {
            guard seq < .max else { return nil }
            let p = prefix(target, host)
            return entry(try transaction.cursor(byURL).seek(atLeast: p + (seq + 1).bigEndianBytes), p)
        }

        /// The last recording before `seq`.
        public func recording(target: String, host: String, before seq: UInt64) throws -> Entry? {
            guard seq > 0 else { return nil }
            return try recording(target: target, host: host, atMost: seq - 1)
        }

        public func first(target: String, host: String) throws -> Entry? { try recording(target: target, host: host, after: 0) }
        public func last(target: String, host: String) throws -> Entry? { try recording(target: target, host: host, atMost: .max) }
    }
}
