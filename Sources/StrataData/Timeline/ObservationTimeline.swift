public import EventStore
public import LMDB

/// When each source's data was observed, for date reads (the second time of Strata's
/// bitemporal model: `recordedAt` is when the API said it, seq where the log learnt it).
///
/// Table `observed`: `stream 0x00 recordedAt(i64 with the sign bit flipped, big-endian)
/// seq(u64be)` → a kind byte, for every event of a source that ends a list pass or stores a
/// detail or image:
/// - `1` a complete pass (`FetchCompleted` with `complete=true`; 8 more bytes: the seq of its first page)
/// - `2` a `ListNotModified` (8 more bytes: the seq of the complete `FetchCompleted` it confirmed)
/// - `0` anything else (a partial pass, a detail, an image)
///
/// Table `passes`: `stream` → the seq of the stream's newest complete `FetchCompleted` (by seq),
/// which a `ListNotModified` confirms.
///
/// A date read of a source resolves to the seq of the newest entry observed at or before the
/// date (ties: the later seq), one seek whatever order snapshots were imported in; an import of
/// older data than the newest observation is followed by a restatement of that observation (see
/// ``Fetcher/importSnapshots(_:files:recordedAt:)``), so the entry's seq holds its state.
public struct ObservationTimeline: Projection {
    public let name = "timeline"
    public let version = 1
    public let tables = ["observed", "passes"]
    public let eventTypes: Set<String>? = [DataEvents.fetchCompleted, DataEvents.listNotModified, DataEvents.detailFetched,
                                           DataEvents.detailNotModified, DataEvents.imageFetched]

    public init() {}

    public func apply(_ event: RecordedEvent, in context: ProjectionContext) throws {
        guard event.stream.utf8.count <= 400, !event.stream.utf8.contains(0) else { return }
        var value: [UInt8] = [0]
        switch event.type {
        case DataEvents.fetchCompleted where event[metadata: "complete"] == "true":
            guard let pages = event[metadata: "pages"].flatMap(UInt64.init), pages < event.seq else { break }
            value = [1] + (event.seq - pages).bigEndianBytes
            try context.transaction.put(context.tables["passes"], key: Array(event.stream.utf8), value: event.seq.bigEndianBytes)
        case DataEvents.listNotModified:
            guard let raw = try context.transaction.get(context.tables["passes"], key: Array(event.stream.utf8)), raw.count == 8 else { break }
            value = [2] + [UInt8](raw)
        default:
            break
        }
        try context.transaction.put(context.tables["observed"], key: Self.key(event.stream, event.recordedAt, event.seq), value: value)
    }

    static func key(_ stream: String, _ time: Timestamp, _ seq: UInt64) -> [UInt8] {
        Array(stream.utf8) + [0] + (UInt64(bitPattern: time.microseconds) ^ (1 << 63)).bigEndianBytes + seq.bigEndianBytes
    }

    static func time(ofKey key: UnsafeRawBufferPointer, prefix: Int) -> Timestamp {
        Timestamp(microseconds: Int64(bitPattern: UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: key[prefix..<(prefix + 8)])) ^ (1 << 63)))
    }

    /// A list pass as the timeline knows it.
    public struct Pass: Sendable, Hashable {
        /// When it was observed.
        public var recordedAt: Timestamp
        /// The event that ended it (a `FetchCompleted` or `ListNotModified`).
        public var seq: UInt64
        /// Its page events: `pages.lowerBound ..< end`, where end is the `FetchCompleted`.
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
            let bound = ObservationTimeline.key(stream, time, .max)
            guard let e = try c.seek(atMost: bound), e.key.hasPrefix(prefix), e.key.count == prefix.count + 16 else { return 0 }
            return UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[(prefix.count + 8)...]))
        }

        /// The newest observation of `stream` (by time, then seq), or nil.
        public func newest(stream: String) throws -> (recordedAt: Timestamp, seq: UInt64)? {
            let prefix = Array(stream.utf8) + [0]
            let c = try transaction.cursor(tables["observed"])
            guard let e = try c.seek(atMost: prefix + [UInt8](repeating: 0xFF, count: 16)), e.key.hasPrefix(prefix),
                  e.key.count == prefix.count + 16 else { return nil }
            return (ObservationTimeline.time(ofKey: e.key, prefix: prefix.count),
                    UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[(prefix.count + 8)...])))
        }

        /// The `FetchCompleted` of the last complete pass in the log (by seq): what the list's
        /// current state follows.
        public func lastCompletePass(stream: String) throws -> UInt64? {
            guard let raw = try transaction.get(tables["passes"], key: Array(stream.utf8)), raw.count == 8 else { return nil }
            return raw.withUnsafeBytes { UInt64(bigEndianBytes: $0) }
        }

        /// The complete list pass observed last (by time, then seq), with its page events; a
        /// `ListNotModified` stands for the pass it confirmed, observed at its own time.
        public func newestPass(stream: String) throws -> Pass? {
            let prefix = Array(stream.utf8) + [0]
            let c = try transaction.cursor(tables["observed"])
            var entry = try c.seek(atMost: prefix + [UInt8](repeating: 0xFF, count: 16))
            while let e = entry, e.key.hasPrefix(prefix), e.key.count == prefix.count + 16 {
                if e.value.count == 9, e.value[0] == 1 || e.value[0] == 2 {
                    let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[(prefix.count + 8)...]))
                    let other = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.value[1...]))
                    let time = ObservationTimeline.time(ofKey: e.key, prefix: prefix.count)
                    if e.value[0] == 1 { return Pass(recordedAt: time, seq: seq, pages: other..<seq) }
                    // The confirmed pass's pages end at its FetchCompleted, whose entry says where they start.
                    guard let first = try passStart(stream: stream, completedAt: other) else { return nil }
                    return Pass(recordedAt: time, seq: seq, pages: first..<other)
                }
                entry = try c.previous()
            }
            return nil
        }

        /// The first page seq of the complete pass that ended at `seq` (a walk of the stream's
        /// entries from the newest: passes confirmed by a `ListNotModified` are recent).
        private func passStart(stream: String, completedAt seq: UInt64) throws -> UInt64? {
            let prefix = Array(stream.utf8) + [0]
            let c = try transaction.cursor(tables["observed"])
            var entry = try c.seek(atMost: prefix + [UInt8](repeating: 0xFF, count: 16))
            while let e = entry, e.key.hasPrefix(prefix), e.key.count == prefix.count + 16 {
                if UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[(prefix.count + 8)...])) == seq, e.value.count == 9, e.value[0] == 1 {
                    return UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.value[1...]))
                }
                entry = try c.previous()
            }
            return nil
        }
    }
}

extension EventStore {
    /// Reads the observation timeline in one snapshot.
    public func timeline<T: Sendable>(_ body: @escaping @Sendable (ObservationTimeline.Reader) throws -> T) async throws -> T {
        try await read { [self] txn in try body(ObservationTimeline.Reader(transaction: txn, tables: try self.tables(of: "timeline"))) }
    }
}
