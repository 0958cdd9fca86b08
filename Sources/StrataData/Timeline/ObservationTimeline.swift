public import EventStore
public import LMDB

/// When each source's data was observed, for date reads (the second time of Strata's
/// bitemporal model: `recordedAt` is when the API said it, seq where the log learnt it).
///
/// Table `observed`: an entry for every event of a source that ends a list pass or stores a
/// detail or image, in order of the time it was observed, then seq; its value is a kind byte:
/// - `1` a complete pass (`FetchCompleted` with `complete=true`, the entry's seq), then `varint
///   (seq − its first page's seq)`
/// - `2` a `ListNotModified`, then the complete pass it confirmed: `varint (seq − the pass's
///   FetchCompleted), varint (that − its first page)`
/// - `0` anything else (a partial pass, a detail, an image)
///
/// The entries are kept in blocks (since version 5; a row an entry cost its key, the stream and
/// two u64be, LMDB's node header and slot: 39 bytes for 2 of value, 0.10 MB of every 2,500-pass
/// history): `stream 0x00 recordedAt(Timestamp.sortableBits, u64be) seq(u64be)` of a block's
/// first entry → `u8 3 | entries`, each `varint (time − the entry before's) | varint zigzag(seq
/// − the entry before's) | the value` (the first entry's differences are 0: the key has them).
/// An entry goes into the block at or before it (the first block, when it sorts before every
/// entry); a block of ``blockCapacity`` entries is full: an entry after it starts the next block,
/// one in its middle splits it in halves. Entries come in log order, so the blocks follow from
/// the log alone.
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
    public let version = 5
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
        try Blocks.insert(
            Entry(time: event.recordedAt.sortableBits, seq: event.seq, value: value), stream: event.stream, context.transaction, context.tables)
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
            let c = try transaction.cursor(tables["observed"])
            let bits = time.sortableBits
            guard let e = try c.seek(atMost: ObservationTimeline.key(stream, time, .max)), let block = try Blocks.block(e, stream: stream) else { return 0 }
            return block.entries.last { $0.time <= bits }?.seq ?? 0
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
            let c = try transaction.cursor(tables["observed"])
            var row = try c.seek(atMost: Blocks.end(stream))
            while let e = row, let block = try Blocks.block(e, stream: stream) {
                for entry in block.entries.reversed() {
                    if let pages = try entry.value.withUnsafeBytes({ try Self.pass($0, seq: entry.seq) }) {
                        return Pass(recordedAt: Timestamp(sortableBits: entry.time), pages: pages)
                    }
                }
                row = try c.previous()
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

    /// An `observed` entry: when (sortable bits), which seq, its value.
    struct Entry: Equatable {
        var time: UInt64
        var seq: UInt64
        var value: [UInt8]

        func precedes(_ other: Entry) -> Bool { (time, seq) < (other.time, other.seq) }
    }

    /// The `observed` table's blocks (``ObservationTimeline``).
    enum Blocks {
        static let mark: UInt8 = 3

        struct Block {
            var entries: [Entry]

            var encoded: [UInt8] {
                var w = ByteWriter(capacity: 1 + entries.count * 8)
                w.u8(mark)
                var previous = entries[0]
                for e in entries {
                    w.varint(e.time - previous.time)
                    w.zigzag(Int64(bitPattern: e.seq &- previous.seq))
                    w.raw(e.value)
                    previous = e
                }
                return w.bytes
            }
        }

        /// The last key a stream's entry can have: a seek at most it lands on its last block.
        static func end(_ stream: String) -> [UInt8] { Array(stream.utf8) + [0] + [UInt8](repeating: 0xFF, count: 16) }

        /// The block of row `e` when it is one of `stream`'s (nil: another stream's or none).
        static func block(_ e: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer), stream: String) throws -> Block? {
            let prefix = Array(stream.utf8) + [0]
            guard e.key.count == prefix.count + 16, e.key.starts(with: prefix) else { return nil }
            let time = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count..<(prefix.count + 8)]))
            let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[(prefix.count + 8)...]))
            var r = ByteReader(e.value)
            var entries: [Entry] = []
            var previous = Entry(time: time, seq: seq, value: [])
            do {
                guard try r.u8() == mark else { throw ByteReader.Truncated() }
                while !r.isAtEnd {
                    let (t, overflow) = previous.time.addingReportingOverflow(try r.varint())
                    let next = previous.seq &+ UInt64(bitPattern: try r.zigzag())
                    guard !overflow, entries.isEmpty ? (t == time && next == seq) : previous.precedes(Entry(time: t, seq: next, value: [])) else {
                        throw ByteReader.Truncated()
                    }
                    let start = r.offset
                    switch try r.u8() {
                    case 0: break
                    case 1: _ = try r.varint()
                    case 2: _ = try r.varint(); _ = try r.varint()
                    default: throw ByteReader.Truncated()
                    }
                    previous = Entry(time: t, seq: next, value: [UInt8](e.value[start..<r.offset]))
                    entries.append(previous)
                }
            } catch {
                throw EventStoreError(code: .corrupted, message: "a block of the timeline of \(stream) is damaged; rebuild the timeline projection")
            }
            guard !entries.isEmpty else {
                throw EventStoreError(code: .corrupted, message: "a block of the timeline of \(stream) is empty; rebuild the timeline projection")
            }
            return Block(entries: entries)
        }

        /// Puts `entry` into the block it belongs to (the one at or before it; the first when it
        /// sorts before every entry); marks the stream backfilled when it is not its newest.
        static func insert(_ entry: Entry, stream: String, _ txn: Transaction, _ tables: TableSet) throws {
            let observed = tables["observed"]
            let c = try txn.cursor(observed)
            let key = ObservationTimeline.key(stream, Timestamp(sortableBits: entry.time), entry.seq)
            var row = try c.seek(atMost: key)
            if row.map({ !$0.key.starts(with: Array(stream.utf8) + [0]) }) ?? true { row = try c.seek(atLeast: Array(stream.utf8) + [0]) }
            guard let e = row, var block = try block(e, stream: stream) else {
                try txn.put(observed, key: key, value: Block(entries: [entry]).encoded)
                return
            }
            let oldKey = [UInt8](e.key)
            let isLast = try c.next().map { !$0.key.starts(with: Array(stream.utf8) + [0]) } ?? true
            // The first entry at or after the new one.
            let at = block.entries.firstIndex { !$0.precedes(entry) } ?? block.entries.count
            let replaces = at < block.entries.count && !entry.precedes(block.entries[at])
            if !isLast || at < block.entries.count - (replaces ? 1 : 0) {
                // An entry observed before what the stream already holds.
                try txn.put(tables["backfilled"], key: Array(stream.utf8), value: [])
            }
            if replaces {
                block.entries[at] = entry
            } else if isLast, at == block.entries.count, block.entries.count >= blockCapacity {
                // After the last block, full: the next block starts.
                try txn.put(observed, key: key, value: Block(entries: [entry]).encoded)
                return
            } else {
                block.entries.insert(entry, at: at)
            }
            var parts = [block]
            if block.entries.count > blockCapacity {
                let half = block.entries.count / 2
                parts = [Block(entries: Array(block.entries[..<half])), Block(entries: Array(block.entries[half...]))]
            }
            if at == 0 { _ = try txn.delete(observed, key: oldKey) }
            for part in parts {
                let first = part.entries[0]
                try txn.put(observed, key: ObservationTimeline.key(stream, Timestamp(sortableBits: first.time), first.seq), value: part.encoded)
            }
        }
    }

    static let blockCapacity = 64
}

extension EventStore {
    /// Reads the observation timeline in one snapshot.
    public func timeline<T: Sendable>(_ body: @escaping @Sendable (ObservationTimeline.Reader) throws -> T) async throws -> T {
        try await read { [self] txn in try body(ObservationTimeline.Reader(transaction: txn, tables: try self.tables(of: "timeline"))) }
    }
}
