public import EventStore
public import LMDB

/// When each source's data was observed, for date reads (the second time of Strata's
/// bitemporal model: `recordedAt` is when the API said it, seq where the log learnt it).
///
/// Table `observed`: `stream 0x00 recordedAt(Timestamp.sortableBits, u64be) seq(u64be)` → a
/// kind byte, for every event of a source that ends a list pass or stores a detail or image:
/// - `1` a complete pass (`FetchCompleted` with `complete=true`, the key's seq), then `varint
///   (seq − its first page's seq)`
/// - `2` a `ListNotModified`, then the complete pass it confirmed: `varint (seq − the pass's
///   FetchCompleted), varint (that − its first page)`
/// - `0` anything else (a partial pass, a detail, an image)
/// (Version 3 wrote both seqs of the pass as u64be: 17 bytes a row instead of 2 or 3.)
///
/// Table `passes`: `stream` → those 16 bytes for the stream's last complete `FetchCompleted` (by
/// seq), which a `ListNotModified` confirms.
///
/// Table `backfilled`: `stream` → empty, once an entry reached the log observed before the
/// stream's newest: from then on log order and observed order differ, and item versions are
/// numbered by reading their history in observed order (``ItemTables``).
///
/// A date read of a source resolves to the seq of the newest entry observed at or before the
/// date (ties: the later seq), one seek whatever order snapshots were imported in; an import of
/// older data than the newest observation is followed by a restatement of that observation (see
/// ``Fetcher/importSnapshots(_:snapshots:skipInvalid:batchSize:progress:)``), so the entry's seq
/// holds its state.
public struct ObservationTimeline: Projection {
    public let name = "timeline"
    public let version = 4
    public let tables = ["observed", "passes", "backfilled"]
    public let eventTypes: Set<String>? = [
        DataEvents.fetchCompleted, DataEvents.listNotModified, DataEvents.detailFetched,
        DataEvents.detailNotModified, DataEvents.imageFetched
    ]

    public init() {}

    public func apply(_ event: RecordedEvent, in context: ProjectionContext) throws {
        guard event.stream.utf8.count <= 400, !event.stream.utf8.contains(0) else { return }
        var value: [UInt8] = [0]
        switch event.type {
        case DataEvents.fetchCompleted where event[metadata: "complete"] == "true":
            guard let pages = event[metadata: "pages"].flatMap(UInt64.init), pages < event.seq else { break }
            let pass = event.seq.bigEndianBytes + (event.seq - pages).bigEndianBytes
            var w = ByteWriter()
            w.u8(1)
            w.varint(pages)
            value = w.bytes
            try context.transaction.put(context.tables["passes"], key: Array(event.stream.utf8), value: pass)
        case DataEvents.listNotModified:
            guard let pass = try context.transaction.get(context.tables["passes"], key: Array(event.stream.utf8)), pass.count == 16 else { break }
            let completed = pass.withUnsafeBytes { UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: $0[..<8])) }
            let first = pass.withUnsafeBytes { UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: $0[8...])) }
            guard completed < event.seq, first <= completed else { break }
            var w = ByteWriter()
            w.u8(2)
            w.varint(event.seq - completed)
            w.varint(completed - first)
            value = w.bytes
        default:
            break
        }
        let key = Self.key(event.stream, event.recordedAt, event.seq)
        let prefix = Array(event.stream.utf8) + [0]
        let c = try context.transaction.cursor(context.tables["observed"])
        if let newest = try c.seek(atMost: prefix + [UInt8](repeating: 0xFF, count: 16)), newest.key.hasPrefix(prefix),
            key.lexicographicallyPrecedes(newest.key)
        {
            try context.transaction.put(context.tables["backfilled"], key: Array(event.stream.utf8), value: [])
        }
        try context.transaction.put(context.tables["observed"], key: key, value: value)
    }

    static func key(_ stream: String, _ time: Timestamp, _ seq: UInt64) -> [UInt8] {
        Array(stream.utf8) + [0] + time.sortableBits.bigEndianBytes + seq.bigEndianBytes
    }

    /// A list pass as the timeline knows it.
    public struct Pass: Sendable, Hashable {
        /// When it was observed (a `ListNotModified`'s own time for the pass it confirmed).
        public var recordedAt: Timestamp
        /// Its page events: `pages.lowerBound ..< pages.upperBound`, the seq of its `FetchCompleted`.
        public var pages: Range<UInt64>
    }

    /// Reads the timeline in one snapshot.
    public struct Reader {
        let transaction: Transaction
        let tables: TableSet

        public init(transaction: Transaction, tables: TableSet) {
            self.transaction = transaction
            self.tables = tables
        }

        /// The seq holding what `stream` looked like as observed at `time`: the newest entry at
        /// or before it (0 when nothing was observed by then).
        public func seq(stream: String, observedAt time: Timestamp) throws -> UInt64 {
            let prefix = Array(stream.utf8) + [0]
            let c = try transaction.cursor(tables["observed"])
            guard let e = try c.seek(atMost: ObservationTimeline.key(stream, time, .max)), e.key.hasPrefix(prefix),
                e.key.count == prefix.count + 16
            else { return 0 }
            return UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[(prefix.count + 8)...]))
        }

        /// Whether anything of `stream` reached the log observed before what it already held.
        public func isBackfilled(stream: String) throws -> Bool {
            try transaction.get(tables["backfilled"], key: Array(stream.utf8)) != nil
        }

        /// The `FetchCompleted` of the last complete pass in the log (by seq): what the list's
        /// current state follows.
        public func lastCompletePass(stream: String) throws -> UInt64? {
            guard let raw = try transaction.get(tables["passes"], key: Array(stream.utf8)), raw.count == 16 else { return nil }
            return raw.withUnsafeBytes { UInt64(bigEndianBytes: $0) }
        }

        /// The complete list pass observed last (by time, then seq), with its page events; a
        /// `ListNotModified` stands for the pass it confirmed, observed at its own time.
        public func newestPass(stream: String) throws -> Pass? {
            let prefix = Array(stream.utf8) + [0]
            let c = try transaction.cursor(tables["observed"])
            var entry = try c.seek(atMost: prefix + [UInt8](repeating: 0xFF, count: 16))
            while let e = entry, e.key.hasPrefix(prefix), e.key.count == prefix.count + 16 {
                if let pages = try Self.pass(e.value, seq: UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[(prefix.count + 8)...]))) {
                    let time = Timestamp(sortableBits: UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...])))
                    return Pass(recordedAt: time, pages: pages)
                }
                entry = try c.previous()
            }
            return nil
        }

        /// The page events of the pass an `observed` value of the entry at `seq` names, or nil
        /// for an entry that names none.
        static func pass(_ value: UnsafeRawBufferPointer, seq: UInt64) throws -> Range<UInt64>? {
            guard value.first == 1 || value.first == 2 else { return nil }
            var r = ByteReader(UnsafeRawBufferPointer(rebasing: value[1...]))
            var completed = seq
            if value.first == 2 {
                let back = try? r.varint()
                guard let back, back < seq else { throw damaged(seq) }
                completed -= back
            }
            guard let pages = try? r.varint(), pages <= completed, r.isAtEnd else { throw damaged(seq) }
            return (completed - pages)..<completed
        }

        private static func damaged(_ seq: UInt64) -> EventStoreError {
            EventStoreError(code: .corrupted, message: "a timeline entry of seq \(seq) is damaged; rebuild the timeline projection")
        }
    }
}

extension EventStore {
    /// Reads the observation timeline in one snapshot.
    public func timeline<T: Sendable>(_ body: @escaping @Sendable (ObservationTimeline.Reader) throws -> T) async throws -> T {
        try await read { [self] txn in try body(ObservationTimeline.Reader(transaction: txn, tables: try self.tables(of: "timeline"))) }
    }
}
