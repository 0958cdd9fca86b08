import EventStore
import LMDB

/// The `schema` projection's `drift` table: each drift of a source's shape once, in blocks of a
/// source's consecutive drifts. Drifts are facts that never change; kept as documents they each
/// paid for a current record, an order entry and a history record (2,480 of them were a quarter
/// of the projection on the first 2,500 commits of a real scraping history), and then a row each
/// cost its key (the source, a seq, the path again), LMDB's node header and slot: 74 bytes a
/// drift, 0.18 MB of that history. A block of them shares what drifts repeat (the same paths
/// coming and going, the same kinds and types): 18 bytes a drift there.
///
/// Key: `SOURCE 0x00 seq(u64be)`, the seq of the block's first drift (the source as
/// ``TableSet/text(_:)`` has it: a digest in an encrypted store).
/// Value: the source's last block is open, plain: `0x02 | entries`; an event's drifts join it
/// until it holds ``capacity`` drifts or ``capacityBytes`` bytes, when the next event's drifts
/// close it and start a block of their own (an event's drifts are never split, so blocks follow
/// from the log alone, however its events were batched). A closed block is its entries as a
/// ``CompressedValue`` (`0x01 | varint n | zstd frame`, or `0x00 | entries` when compressing
/// does not pay). An entry: `varint (seq − the entry before's; 0 for the first) | u8 kind (0
/// added, 1 gone, 2 typeChanged) | varint zigzag (observed µs − the entry before's; the first:
/// since 1970) | u8 types before | u8 types after (bit i: ``types``[i]) | varint items | varint
/// n, n bytes path | varint m, m bytes example (canonical JSON; m = 0: none)`.
///
/// A read from a seq seeks the block at or before it and walks on; a read as of a point stops
/// at the first block after it.
package enum SchemaDriftRows {
    package static let table = "drift"
    static let kinds = ["added", "gone", "typeChanged"]
    static let types = ["null", "boolean", "number", "string", "array", "object"]
    static let capacity = 64
    static let capacityBytes = 8 << 10
    static let openMark: UInt8 = 2

    static func prefix(_ source: String, _ tables: TableSet) -> [UInt8] { tables.text(source) + [0] }

    /// Stores the drifts of one event (all of the same seq, in path order) for `source`.
    static func put(_ drifts: [SchemaDriftEntity], source: String, _ ctx: ProjectionContext) throws {
        guard let seq = drifts.first?.seq else { return }
        guard drifts.allSatisfy({ $0.seq == seq }) else { throw DocumentError("an event's drifts have more than one seq") }
        let p = prefix(source, ctx.tables)
        let db = ctx.tables[table]
        let c = try ctx.transaction.cursor(db)
        var first = seq
        var block = Block()
        if let e = try c.seek(atMost: p + [UInt8](repeating: 0xFF, count: 8)), e.key.count == p.count + 8, e.key.starts(with: p),
            e.value.first == openMark
        {
            let start = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[p.count...]))
            let open = try Block(decoding: [UInt8](e.value[1...]), first: start)
            guard open.last.seq <= seq else {
                throw EventStoreError(code: .corrupted, message: "a drift at seq \(seq) comes after one at \(open.last.seq); rebuild the schema projection")
            }
            if open.count < capacity, open.bytes.count < capacityBytes {
                (first, block) = (start, open)
            } else {
                // Full: closed, compressed; this event's drifts start the next block.
                _ = try ctx.transaction.put(db, key: [UInt8](e.key), value: CompressedValue.encode(open.bytes))
            }
        }
        for d in drifts { try block.append(d) }
        _ = try ctx.transaction.put(db, key: p + first.bigEndianBytes, value: [openMark] + block.bytes)
    }

    /// `source`'s drifts after seq `after` up to seq `upTo`, oldest first (by seq, then path):
    /// the walk stops at the first block past `upTo`, so a read as of a point decodes none after
    /// it.
    static func read(source: String, after: UInt64, upTo: UInt64 = .max, _ reader: DocumentReader) throws -> [SchemaDriftEntity] {
        let p = prefix(source, reader.tables)
        let c = try reader.transaction.cursor(reader.tables[table])
        var out: [SchemaDriftEntity] = []
        var entry = try c.seek(atMost: p + (after == .max ? after : after + 1).bigEndianBytes)
        if entry.map({ !$0.key.starts(with: p) }) ?? true { entry = try c.seek(atLeast: p) }
        while let e = entry, e.key.count == p.count + 8, e.key.starts(with: p) {
            let start = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[p.count...]))
            if start > upTo { break }
            let entries: [UInt8]
            if e.value.first == openMark { entries = [UInt8](e.value[1...]) } else { entries = try CompressedValue.decode(e.value) }
            try Block.walk(entries, first: start, decoding: true) { seq, d in
                if seq > after, seq <= upTo, let d { out.append(d) }
            }
            entry = try c.next()
        }
        return out.sorted { ($0.seq, $0.path) < ($1.seq, $1.path) }
    }

    /// A block's entries, as the writer extends them.
    struct Block {
        var bytes: [UInt8] = []
        var count = 0
        var last = (seq: UInt64(0), at: Int64(0))

        init() {}

        /// The open block `bytes` starting at seq `first`: walked without decoding its paths and
        /// examples, to know its count and its last entry.
        init(decoding bytes: [UInt8], first: UInt64) throws {
            self.bytes = bytes
            var n = 0
            var last = (seq: first, at: Int64(0))
            try Self.walk(bytes, first: first, decoding: false) { seq, _ in
                n += 1; last.seq = seq
            } lastTime: {
                last.at = $0
            }
            (count, self.last) = (n, last)
        }

        mutating func append(_ d: SchemaDriftEntity) throws {
            guard let kind = kinds.firstIndex(of: d.kind) else { throw DocumentError("unknown drift kind \(d.kind)") }
            func mask(_ names: [String]) throws -> UInt8 {
                try names.reduce(0) { m, t in
                    guard let i = types.firstIndex(of: t) else { throw DocumentError("unknown JSON type \(t)") }
                    return m | 1 << i
                }
            }
            var w = ByteWriter(capacity: 64)
            w.varint(count == 0 ? 0 : d.seq - last.seq)
            w.u8(UInt8(kind))
            let at = d.at.microseconds
            let delta = count == 0 ? at : at &- last.at
            w.zigzag(delta)
            w.u8(try mask(d.before))
            w.u8(try mask(d.after))
            w.varint(d.items)
            w.string(d.path)
            w.blob(d.example?.canonicalBytes ?? [])
            bytes += w.bytes
            count += 1
            last = (d.seq, at)
        }

        /// Calls `body` with each entry's seq and, when `decoding`, the entry (paths and examples
        /// are skipped otherwise); `lastTime` gets the last entry's time.
        static func walk(
            _ bytes: [UInt8], first: UInt64, decoding: Bool, _ body: (UInt64, SchemaDriftEntity?) throws -> Void,
            lastTime: (Int64) -> Void = { _ in }
        ) throws {
            do {
                try bytes.withUnsafeBytes { raw in
                    var r = ByteReader(raw)
                    var seq = first, at: Int64 = 0, n = 0
                    while !r.isAtEnd {
                        let gap = try r.varint()
                        guard n > 0 || gap == 0, !seq.addingReportingOverflow(gap).overflow else { throw ByteReader.Truncated() }
                        seq += gap
                        let kind = Int(try r.u8())
                        guard kind < kinds.count else { throw ByteReader.Truncated() }
                        let delta = try r.zigzag()
                        at = n == 0 ? delta : at &+ delta
                        let before = try r.u8(), after = try r.u8()
                        let items = try r.varint()
                        n += 1
                        guard decoding else {
                            _ = try r.slice(try r.count())
                            _ = try r.slice(try r.count())
                            try body(seq, nil)
                            continue
                        }
                        let path = try r.string()
                        let example = try r.blob()
                        func names(_ m: UInt8) -> [String] { types.indices.filter { m & 1 << $0 != 0 }.map { types[$0] } }
                        var parsed: JSONValue?
                        if !example.isEmpty {
                            guard let v = try? JSONValue(parsing: example) else { throw ByteReader.Truncated() }
                            parsed = v
                        }
                        guard items <= UInt64(Int.max) else { throw ByteReader.Truncated() }
                        try body(
                            seq,
                            SchemaDriftEntity(
                                seq: seq, at: Timestamp(microseconds: at), path: path, kind: kinds[kind], before: names(before), after: names(after),
                                items: Int(items), example: parsed))
                    }
                    lastTime(at)
                }
            } catch is ByteReader.Truncated {
                throw EventStoreError(code: .corrupted, message: "a block of schema drifts is damaged; rebuild the schema projection")
            }
        }
    }
}
