import LMDB

/// The stream, type and time indexes, a row per block of up to ``capacity`` entries instead of a
/// row per event.
///
/// A row per event cost its key (the name and a seq, or a time and a seq), LMDB's 8-byte node
/// header and a 2-byte slot: about 30 bytes in each of the three indexes, 0.47 MB of the fires
/// history's 5.80 MB for 4,996 events. A block row keeps the key of its first entry, so a seek
/// finds it as it found that entry, and the entries after it as varint gaps: one or two bytes an
/// event.
///
/// - `by-stream`, `by-type`: key `name 0x00 u64be(first seq)`; value: for each later entry of
///   the row, `varint (seq − the seq before it)` (≥ 1).
/// - `by-time`: key `u64be(effective time, sign bit flipped) u64be(first seq)`; the row holds the
///   seqs from its first on, consecutive (every event has an entry); value: for each later one,
///   `varint (its time − the time before it)` (≥ 0: the effective time never decreases).
///
/// A row per event, as stores before format 6 wrote them, is a row of one entry (an empty
/// value), so those stores are read as they are; their next appends extend their last rows.
enum IndexBlocks {
    /// Entries per row: gaps of 1–10 bytes keep a row under LMDB's largest node (about 2 KiB
    /// on 4 KiB pages), so a row never takes an overflow page of its own.
    static let capacity = 128

    /// The seqs of a `by-stream` or `by-type` row whose first is `first`.
    static func seqs(first: UInt64, _ value: UnsafeRawBufferPointer) throws -> [UInt64] {
        try entries(first: first, value, gapsFrom: 1, "the stream or type index")
    }

    /// The effective times (sortable bits, ``Timestamp/sortableBits``) of a `by-time` row whose
    /// first is `first`: the row's seqs are its first seq and the ones after it, in turn.
    static func times(first: UInt64, _ value: UnsafeRawBufferPointer) throws -> [UInt64] {
        try entries(first: first, value, gapsFrom: 0, "the time index")
    }

    /// A row's entries: `first`, then each gap added to the entry before (seqs increase; times
    /// never decrease).
    private static func entries(first: UInt64, _ value: UnsafeRawBufferPointer, gapsFrom least: UInt64, _ what: String) throws -> [UInt64] {
        var out = [first]
        var r = ByteReader(value)
        var last = first
        while !r.isAtEnd {
            let gap = try varint(&r, what)
            guard gap >= least, case let (next, false) = last.addingReportingOverflow(gap) else {
                throw EventStoreError.corrupted("\(what) has a damaged row (its entries do not follow each other); run `strata verify`")
            }
            out.append(next)
            last = next
        }
        return out
    }

    /// How many entries a row holds and its last entry (a seq, or a time's bits), without
    /// building the list.
    static func tail(first: UInt64, _ value: UnsafeRawBufferPointer) throws -> (count: Int, last: UInt64) {
        var r = ByteReader(value)
        var (count, last) = (1, first)
        while !r.isAtEnd {
            last &+= try varint(&r, "an index")
            count += 1
        }
        return (count, last)
    }

    /// A `by-time` row key's parts: its first entry's time (sortable bits) and seq; nil for a
    /// key of another length.
    static func timeRowKey(_ key: UnsafeRawBufferPointer) -> (time: UInt64, first: UInt64)? {
        guard key.count == 16 else { return nil }
        return (UInt64(bigEndianBytes: key), UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: key[8..<16])))
    }

    private static func varint(_ r: inout ByteReader, _ what: String) throws -> UInt64 {
        do { return try r.varint() } catch { throw EventStoreError.corrupted("\(what) has a truncated row; run `strata verify`") }
    }

    /// The last seq whose effective time is at or before `time` (0 if none): one seek, to the
    /// last row whose first time is at or before it, and a walk of that row.
    static func seq(asOf time: Timestamp, _ txn: Transaction, _ schema: LogSchema) throws -> UInt64 {
        let bits = time.sortableBits
        let c = try txn.cursor(schema.byTime)
        // The first row past `time` is the one after ours.
        let key = LogSchema.timeKey(Timestamp(sortableBits: bits == .max ? .max : bits + 1), 0)
        let found: Cursor.Entry?
        if try c.seek(atLeast: key) != nil { found = try c.previous() } else { found = try c.last() }
        guard let found, let (time, first) = timeRowKey(found.key) else { return 0 }
        let times = try Self.times(first: time, found.value)
        // The row's first time is at or before `time`, so one entry at least is.
        var n = 1
        while n < times.count && times[n] <= bits { n += 1 }
        return first + UInt64(n - 1)
    }

    /// Rewrites the stream or type index `db` (``postings`` true) or the time index in rows of
    /// ``capacity`` entries: a store before format 6, with a row per event, as it opens. Its rows
    /// are read first and the table is left as it is when one does not decode (`verify` reports
    /// it). Returns whether it rewrote the table.
    @discardableResult
    static func reblock(_ db: Database, postings: Bool, _ txn: Transaction) throws -> Bool {
        // Each run: a row key's first part (the name, or nothing for the time index), and its
        // entries (seqs, or for the time index seq and time), in key order.
        var runs: [(prefix: [UInt8], entries: [(seq: UInt64, time: UInt64)])] = []
        let c = try txn.cursor(db)
        var entry = try c.first()
        var rows = 0
        do {
            while let e = entry {
                rows += 1
                if postings {
                    guard e.key.count >= 9 else { return false }
                    let prefix = [UInt8](e.key[..<(e.key.count - 8)])
                    let seqs = try Self.seqs(first: UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[(e.key.count - 8)...])), e.value)
                    if runs.last?.prefix != prefix { runs.append((prefix, [])) }
                    runs[runs.count - 1].entries += seqs.map { ($0, 0) }
                } else {
                    guard let (time, first) = timeRowKey(e.key) else { return false }
                    let times = try Self.times(first: time, e.value)
                    if runs.isEmpty { runs.append(([], [])) }
                    runs[0].entries += times.enumerated().map { (first + UInt64($0.offset), $0.element) }
                }
                entry = try c.next()
            }
        } catch is EventStoreError {
            return false
        }
        guard runs.reduce(0, { $0 + ($1.entries.count + capacity - 1) / capacity }) < rows else { return false }
        try txn.clear(db)
        var lastKey: [UInt8] = []
        for run in runs {
            var i = 0
            while i < run.entries.count {
                let first = run.entries[i]
                var w = ByteWriter(capacity: 2 * capacity)
                var (count, last) = (1, first)
                i += 1
                // A time row's seqs are consecutive.
                while i < run.entries.count, count < capacity, postings || run.entries[i].seq == last.seq + 1 {
                    let next = run.entries[i]
                    guard postings ? next.seq > last.seq : next.time >= last.time else { break }
                    w.varint(postings ? next.seq - last.seq : next.time - last.time)
                    (count, last) = (count + 1, next)
                    i += 1
                }
                let key = postings ? run.prefix + first.seq.bigEndianBytes : first.time.bigEndianBytes + first.seq.bigEndianBytes
                // In key order, so pages fill to the end; a damaged time index may be out of it.
                _ = try txn.put(db, key: key, value: w.bytes, flags: lastKey.lexicographicallyPrecedes(key) ? .append : [])
                lastKey = key
            }
        }
        return true
    }

    /// How many entries the index `db` holds, over all its rows.
    static func entries(_ db: Database, _ txn: Transaction) throws -> Int {
        let c = try txn.cursor(db)
        var n = 0
        var entry = try c.first()
        while let e = entry {
            guard e.key.count >= 8 else { throw EventStoreError.corrupted("an index has a row whose key is not a name or time and a seq") }
            n += try tail(first: 0, e.value).count
            entry = try c.next()
        }
        return n
    }

    /// The effective time of the log's last event (its time index's last entry).
    static func lastTime(_ txn: Transaction, _ schema: LogSchema) throws -> Timestamp? {
        guard let last = try txn.cursor(schema.byTime).last(), let (time, _) = timeRowKey(last.key) else { return nil }
        return Timestamp(sortableBits: try tail(first: time, last.value).last)
    }
}

/// The seqs one name has in the stream or type index, walked in either direction across its
/// rows (``IndexBlocks``).
final class IndexCursor {
    private let cursor: Cursor
    private let prefix: [UInt8]
    private var block: [UInt64] = []
    private var index = 0

    init(_ db: Database, name: String, _ txn: Transaction) throws {
        cursor = try txn.cursor(db)
        prefix = Array(name.utf8) + [0]
    }

    /// The first seq at or after `seq`.
    func seek(atLeast seq: UInt64) throws -> UInt64? {
        let key = prefix + seq.bigEndianBytes
        if let e = try cursor.seek(atMost: key), try load(e) {
            if let i = block.firstIndex(where: { $0 >= seq }) {
                index = i
                return block[i]
            }
            return try nextRow()
        }
        guard let e = try cursor.seek(atLeast: key), try load(e) else { return nil }
        index = 0
        return block[0]
    }

    /// The last seq at or before `seq`.
    func seek(atMost seq: UInt64) throws -> UInt64? {
        guard let e = try cursor.seek(atMost: prefix + seq.bigEndianBytes), try load(e) else { return nil }
        // The row's first seq is at or before `seq`.
        index = block.lastIndex { $0 <= seq } ?? 0
        return block[index]
    }

    /// Whether the name indexes `seq`: from the row at hand when it spans `seq` (a walk of the
    /// log in seq order stays in a row for its 128 entries), else after a seek.
    func contains(_ seq: UInt64) throws -> Bool {
        if let first = block.first, let last = block.last, first <= seq, seq <= last {
            if let i = block.firstIndex(of: seq) {
                index = i
                return true
            }
            return false
        }
        return try seek(atLeast: seq) == seq
    }

    func next() throws -> UInt64? {
        if index + 1 < block.count {
            index += 1
            return block[index]
        }
        return try nextRow()
    }

    func previous() throws -> UInt64? {
        if index > 0 {
            index -= 1
            return block[index]
        }
        guard let e = try cursor.previous(), try load(e) else { return nil }
        index = block.count - 1
        return block[index]
    }

    private func nextRow() throws -> UInt64? {
        guard let e = try cursor.next(), try load(e) else { return nil }
        index = 0
        return block[0]
    }

    /// Decodes `e` when it is one of the name's rows.
    private func load(_ e: Cursor.Entry) throws -> Bool {
        guard e.key.count == prefix.count + 8, e.key.hasPrefix(prefix) else { return false }
        block = try IndexBlocks.seqs(first: UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...])), e.value)
        return true
    }
}

/// The time index's entries in seq order, row after row: `verify` walks it beside the log.
final class TimeIndexWalk {
    private let cursor: Cursor
    private var times: [UInt64] = []
    private var first: UInt64 = 0
    private var index = 0
    private var started = false

    init(_ schema: LogSchema, _ txn: Transaction) throws { cursor = try txn.cursor(schema.byTime) }

    /// The next entry: a seq and its effective time.
    func next() throws -> (seq: UInt64, time: Timestamp)? {
        if index + 1 < times.count {
            index += 1
            return (first + UInt64(index), Timestamp(sortableBits: times[index]))
        }
        guard let e = started ? try cursor.next() : try cursor.first() else { return nil }
        started = true
        guard let (time, first) = IndexBlocks.timeRowKey(e.key) else {
            throw EventStoreError.corrupted("the time index has a row whose key is not a time and a seq")
        }
        self.first = first
        times = try IndexBlocks.times(first: time, e.value)
        index = 0
        return (first, Timestamp(sortableBits: times[0]))
    }
}

/// The index entries of the events one transaction appends, in seq order: each name's last row
/// (and the time index's) is read once, extended in memory and written when it is full or when
/// the append ends (``flush()``), so a batch of events writes a row per 128 of them, not three
/// per event.
struct IndexBlockWriter {
    /// A row being extended; `count` 0: none (the name's next entry starts a row).
    private struct Tail {
        var key: [UInt8] = []
        var value: [UInt8] = []
        var count = 0
        /// The last entry's seq, and for the time index its time's bits.
        var lastSeq: UInt64 = 0
        var lastTime: UInt64 = 0
        var dirty = false

        /// Adds an entry in place when the row has room and the entry follows its last one (a
        /// time row's seqs are consecutive); false when it starts a row instead.
        mutating func extend(seq: UInt64, time: UInt64, timeRow: Bool) -> Bool {
            guard count > 0, count < IndexBlocks.capacity, timeRow ? seq == lastSeq + 1 && time >= lastTime : seq > lastSeq else { return false }
            ByteWriter.varint(timeRow ? time - lastTime : seq - lastSeq) { value.append($0) }
            count += 1
            lastSeq = seq
            lastTime = time
            dirty = true
            return true
        }
    }

    private let schema: LogSchema
    private let txn: Transaction
    private var streams: [String: Tail] = [:]
    private var types: [String: Tail] = [:]
    private var time: Tail?

    init(_ schema: LogSchema, _ txn: Transaction) {
        self.schema = schema
        self.txn = txn
    }

    /// Adds the entries of the event at `seq` (`effective`: its time, never before the time of
    /// the event before it).
    mutating func add(stream: String, type: String, effective: Timestamp, seq: UInt64) throws {
        try Self.add(&streams, schema.byStream, stream, seq, txn)
        try Self.add(&types, schema.byType, type, seq, txn)
        if time == nil { time = try Self.lastTimeRow(schema, txn) ?? Tail() }
        let bits = effective.sortableBits
        if !time!.extend(seq: seq, time: bits, timeRow: true) {
            if time!.dirty { try Self.write(schema.byTime, time!, txn) }
            time = Tail(key: LogSchema.timeKey(effective, seq), count: 1, lastSeq: seq, lastTime: bits, dirty: true)
        }
    }

    /// Writes the rows the append extended or started.
    mutating func flush() throws {
        for t in streams.values where t.dirty { try Self.write(schema.byStream, t, txn) }
        for t in types.values where t.dirty { try Self.write(schema.byType, t, txn) }
        if let t = time, t.dirty { try Self.write(schema.byTime, t, txn) }
        streams = [:]
        types = [:]
        time = nil
    }

    private static func add(_ tails: inout [String: Tail], _ db: Database, _ name: String, _ seq: UInt64, _ txn: Transaction) throws {
        if tails[name] == nil { tails[name] = try lastRow(db, name, txn) ?? Tail() }
        // In place: the row's bytes are not copied for each entry.
        if tails[name]!.extend(seq: seq, time: 0, timeRow: false) { return }
        if tails[name]!.dirty { try write(db, tails[name]!, txn) }
        tails[name] = Tail(key: LogSchema.indexKey(name, seq), count: 1, lastSeq: seq, dirty: true)
    }

    /// The name's last row, unless it is full.
    private static func lastRow(_ db: Database, _ name: String, _ txn: Transaction) throws -> Tail? {
        try LogSchema.withIndexKey(name, .max) { probe in
            let c = try txn.cursor(db)
            let prefix = UnsafeRawBufferPointer(rebasing: probe[..<(probe.count - 8)])
            guard let e = try c.seek(atMost: probe), e.key.count == probe.count, e.key.starts(with: prefix) else { return nil }
            let first = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]))
            let (count, last) = try IndexBlocks.tail(first: first, e.value)
            guard count < IndexBlocks.capacity else { return nil }
            var value = [UInt8](e.value)
            value.reserveCapacity(2 * IndexBlocks.capacity)
            return Tail(key: [UInt8](e.key), value: value, count: count, lastSeq: last, dirty: false)
        }
    }

    /// The time index's last row, unless it is full.
    private static func lastTimeRow(_ schema: LogSchema, _ txn: Transaction) throws -> Tail? {
        guard let e = try txn.cursor(schema.byTime).last(), let (time, first) = IndexBlocks.timeRowKey(e.key) else { return nil }
        let (count, last) = try IndexBlocks.tail(first: time, e.value)
        guard count < IndexBlocks.capacity else { return nil }
        return Tail(key: [UInt8](e.key), value: [UInt8](e.value), count: count, lastSeq: first + UInt64(count - 1), lastTime: last, dirty: false)
    }

    private static func write(_ db: Database, _ t: Tail, _ txn: Transaction) throws {
        _ = try txn.put(db, key: t.key, value: t.value)
    }
}
