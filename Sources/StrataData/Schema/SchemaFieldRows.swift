import EventStore
import LMDB

/// The `schema` projection's counts of each field of a source: how many current items (and
/// details) carry a path, and how many with each JSON type there, now and as of any seq.
///
/// Counts were the `fields/SOURCE` documents' and changed with nearly every event: every field
/// of an item that comes or goes moves. Each event then wrote a version of every field's
/// document (its counts and the seq they last changed), 0.79 MB for the 25 fields of a real
/// scraping history's 2,500 versions, a fifth of its bodies. But a field's counts are a sum over
/// shapes: how many items have each shape, times whether the shape has the path (and the type).
/// An event that brings and takes items moves the counts of two or three shapes where it moves
/// fifty field counts, so the history keeps the shapes' counts, and a read as of a seq adds up
/// the shapes (a few dozen, each kept once in `shapes`). The documents keep what rarely changes
/// (the seq a path first appeared, an example of each type).
///
/// `field-now`: key `SOURCE 0x00 PATH` (as ``TableSet/text(_:)`` has them), value `varint last`
/// (the seq its counts last changed) `| u8 examples` (bit i: its document has an example of type
/// ``SchemaDriftRows/types``[i]) `| u8 present | varint per set bit` (bit s: slot s is not zero;
/// slot 0 counts the items carrying the path, slot 1 + i those with type i there) `| varint n,
/// n bytes path`. The fold reads and writes the rows of the paths an event touches.
///
/// `field-counts`, a source's history, keys `SOURCE 0x00 seq(u64be) suffix`:
/// - suffix 0, a keyframe after the event at seq, a ``CompressedValue`` of `varint m | m × (16
///   bytes shape reference | varint count)` (in reference order, which numbers them: every shape
///   seen, at 0 too, while there are at most ``keptShapes``; past that, those some item or
///   detail has) `| varint n | n × (varint k, k bytes path | varint last)` (every path,
///   in path order, and the seq its counts last changed);
/// - suffix 1, a block of the events from seq on that changed a shape's count: open (the
///   source's last), `0x02 | varint (seq − the keyframe's seq) | varint carried | entries`, or,
///   closed, a ``CompressedValue`` of its entries. An event's entry: `varint (seq − the entry
///   before's; 0 for the block's first) | varint k | k × (varint shape number | varint zigzag
///   change)`, in number order, where a shape's number is its place in the keyframe + 1, or 0
///   followed by its 16-byte reference when the keyframe does not have it.
///
/// A shape the keyframe does not have is named by its reference. An event whose entry would
/// take the changes since the keyframe (`carried` and the open block's) past
/// ``keyframeFactor`` × its size is written as a keyframe instead, and closes the open block; a
/// block closes at ``capacity`` events or ``capacityBytes`` bytes. So an as-of read decodes at
/// most a keyframe and about four times its size of changes, and what is written follows from
/// the log alone, however its events were batched.
package enum SchemaFieldRows {
    package static let now = "field-now"
    package static let history = "field-counts"
    static let slots = 1 + SchemaDriftRows.types.count
    static let capacity = 64
    static let capacityBytes = 8 << 10
    static let keyframeFactor = 4
    static let keptShapes = 256
    static let openMark: UInt8 = 2
    static let keyframeSuffix: UInt8 = 0
    static let blockSuffix: UInt8 = 1

    /// A path's counts: slot 0 the items carrying it, slot 1 + i those with type
    /// ``SchemaDriftRows/types``[i] there; `last`, the seq any of them last changed.
    package struct Counts: Equatable, Sendable {
        package var values = [Int](repeating: 0, count: SchemaFieldRows.slots)
        package var last: UInt64 = 0

        package var items: Int { values[0] }

        /// Type → count, the types with any.
        package var types: [String: Int] {
            var out: [String: Int] = [:]
            for (i, t) in SchemaDriftRows.types.enumerated() where values[1 + i] > 0 { out[t] = values[1 + i] }
            return out
        }

        package init() {}

        init(last: UInt64) { self.last = last }

        fileprivate func write(_ w: inout ByteWriter) {
            w.varint(last)
            var present: UInt8 = 0
            for s in values.indices where values[s] > 0 { present |= 1 << s }
            w.u8(present)
            for v in values where v > 0 { w.varint(v) }
        }

        fileprivate init(_ r: inout ByteReader) throws {
            last = try r.varint()
            let present = try r.u8()
            guard present >> SchemaFieldRows.slots == 0 else { throw ByteReader.Truncated() }
            for s in values.indices where present & 1 << s != 0 {
                let v = try r.varint()
                guard v > 0, v <= UInt64(Int.max) else { throw ByteReader.Truncated() }
                values[s] = Int(v)
            }
        }

        /// Adds `times` × one document that has the path with `types` there.
        mutating func add(_ types: Set<String>, times: Int) {
            values[0] += times
            for t in types { values[Self.slot(t)] += times }
        }

        /// The slot of JSON type `type`.
        static func slot(_ type: String) -> Int { 1 + (SchemaDriftRows.types.firstIndex(of: type) ?? 0) }
    }

    /// A path's `field-now` row.
    struct Now {
        var path: String
        var counts = Counts()
        /// Whether it was stored before this event.
        var stored = false
        /// Bit i: its document has an example of type ``SchemaDriftRows/types``[i].
        var examples: UInt8 = 0

        init(path: String) { self.path = path }

        init(_ raw: UnsafeRawBufferPointer) throws {
            var r = ByteReader(raw)
            stored = true
            counts = try Counts(&r)
            examples = try r.u8()
            path = try r.string()
            guard r.isAtEnd else { throw ByteReader.Truncated() }
        }

        var bytes: [UInt8] {
            var w = ByteWriter(capacity: 24 + path.utf8.count)
            counts.write(&w)
            w.u8(examples)
            w.string(path)
            return w.bytes
        }
    }

    static func prefix(_ source: String, _ tables: TableSet) -> [UInt8] { tables.text(source) + [0] }

    static func damaged() -> EventStoreError {
        EventStoreError(code: .corrupted, message: "the schema's field counts are damaged; rebuild the schema projection")
    }

    /// The `field-now` row of `path` (nil: the path was never seen).
    static func row(source: String, path: String, _ txn: Transaction, _ tables: TableSet) throws -> Now? {
        guard let raw = try txn.get(tables[now], key: prefix(source, tables) + tables.text(path)) else { return nil }
        do { return try raw.withUnsafeBytes { try Now($0) } } catch { throw damaged() }
    }

    /// Every path of `source` with its counts now.
    static func current(source: String, _ txn: Transaction, _ tables: TableSet) throws -> [String: Counts] {
        var out: [String: Counts] = [:]
        try forEachRow(source: source, txn, tables) { out[$0.path] = $0.counts }
        return out
    }

    private static func forEachRow(source: String, _ txn: Transaction, _ tables: TableSet, _ body: (Now) throws -> Void) throws {
        let p = prefix(source, tables)
        let c = try txn.cursor(tables[now])
        var e = try c.seek(atLeast: p)
        while let entry = e, entry.key.starts(with: p) {
            let row: Now
            do { row = try Now(entry.value) } catch { throw damaged() }
            try body(row)
            e = try c.next()
        }
    }

    /// What a keyframe holds: how many items and details had each shape, and the seq each
    /// path's counts last changed.
    struct Keyframe {
        var shapes: [(ref: [UInt8], count: Int)] = []
        var last: [(path: String, seq: UInt64)] = []

        init(shapes: [(ref: [UInt8], count: Int)], last: [(path: String, seq: UInt64)]) {
            self.shapes = shapes
            self.last = last
        }

        init(_ bytes: [UInt8]) throws {
            try bytes.withUnsafeBytes { raw in
                var r = ByteReader(raw)
                for _ in 0..<(try r.count()) {
                    let ref = try r.bytes(16)
                    let n = try r.varint()
                    guard n <= UInt64(Int.max) else { throw ByteReader.Truncated() }
                    shapes.append((ref, Int(n)))
                }
                for _ in 0..<(try r.count()) { last.append((try r.string(), try r.varint())) }
                guard r.isAtEnd else { throw ByteReader.Truncated() }
            }
        }

        var bytes: [UInt8] {
            var w = ByteWriter(capacity: 24 * shapes.count + 24 * last.count)
            w.varint(shapes.count)
            for s in shapes {
                w.raw(s.ref)
                w.varint(s.count)
            }
            w.varint(last.count)
            for l in last {
                w.string(l.path)
                w.varint(l.seq)
            }
            return w.bytes
        }
    }

    /// The rows a read as of a seq needs: the last keyframe at or before it and the blocks
    /// after that keyframe up to it, oldest first.
    struct Span {
        var keyframe: Keyframe
        var seq: UInt64
        var blocks: [(first: UInt64, entries: [UInt8])] = []

        /// How many items and details had each shape after the event at `upTo`, and, to
        /// `body`, each event after the keyframe up to it with its changes (shape reference,
        /// change).
        func counts(upTo: UInt64, _ body: (UInt64, [(ref: [UInt8], change: Int)]) throws -> Void = { _, _ in }) throws -> [[UInt8]: Int] {
            var counts = Dictionary(keyframe.shapes.map { ($0.ref, $0.count) }, uniquingKeysWith: { a, _ in a })
            for block in blocks {
                try SchemaFieldRows.walk(block.entries, first: block.first) { s, changes in
                    guard s > seq, s <= upTo else { return }
                    var named: [(ref: [UInt8], change: Int)] = []
                    named.reserveCapacity(changes.count)
                    for (number, ref, change) in changes {
                        guard let ref = ref ?? (number < keyframe.shapes.count ? keyframe.shapes[number].ref : nil) else { throw ByteReader.Truncated() }
                        let n = counts[ref, default: 0] + change
                        guard n >= 0 else { throw ByteReader.Truncated() }
                        counts[ref] = n
                        named.append((ref, change))
                    }
                    try body(s, named)
                }
            }
            return counts
        }
    }

    /// `source`'s span as of `seq` (nil: nothing recorded by then).
    private static func span(_ p: [UInt8], asOf seq: UInt64, _ c: Cursor) throws -> Span? {
        var blocks: [(first: UInt64, entries: [UInt8])] = []
        var e = try c.seek(atMost: p + seq.bigEndianBytes + [blockSuffix])
        while let entry = e, entry.key.count == p.count + 9, entry.key.starts(with: p) {
            let at = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: entry.key[p.count..<(p.count + 8)]))
            if entry.key.last == keyframeSuffix {
                return Span(keyframe: try Keyframe(try CompressedValue.decode(entry.value)), seq: at, blocks: blocks.reversed())
            }
            guard entry.key.last == blockSuffix else { throw ByteReader.Truncated() }
            if entry.value.first == openMark {
                var r = ByteReader(entry.value)
                _ = try r.u8()
                _ = try amount(&r)
                _ = try amount(&r)
                blocks.append((at, [UInt8](UnsafeRawBufferPointer(rebasing: entry.value[r.offset...]))))
            } else {
                blocks.append((at, try CompressedValue.decode(entry.value)))
            }
            e = try c.previous()
        }
        // Blocks without a keyframe before them lead nowhere.
        guard blocks.isEmpty else { throw ByteReader.Truncated() }
        return nil
    }

    /// A source's last rows, as an event's write finds them: the keyframe, and the open block
    /// after it, if any.
    private struct Tail {
        var keyframe: (seq: UInt64, size: Int, frame: Keyframe)
        var open: (first: UInt64, carried: Int, entries: [UInt8], count: Int)?
        /// The seq of the last event written.
        var last: UInt64

        /// Whether the next event's entry joins the open block.
        var continues: Bool { open.map { $0.count < capacity && $0.entries.count < capacityBytes } ?? false }
        /// Bytes of entries since the keyframe.
        var carried: Int { open.map { $0.carried + $0.entries.count } ?? 0 }
    }

    /// `source`'s tail (nil: nothing written yet).
    private static func tail(_ p: [UInt8], _ c: Cursor, _ txn: Transaction, _ db: Database) throws -> Tail? {
        guard let e = try c.seek(atMost: p + [UInt8](repeating: 0xFF, count: 9)), e.key.count == p.count + 9, e.key.starts(with: p) else { return nil }
        let at = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[p.count..<(p.count + 8)]))
        if e.key.last == keyframeSuffix {
            return Tail(keyframe: (at, try CompressedValue.size(e.value), try Keyframe(try CompressedValue.decode(e.value))), last: at)
        }
        guard e.key.last == blockSuffix, e.value.first == openMark else { throw ByteReader.Truncated() }
        var r = ByteReader(e.value)
        _ = try r.u8()
        let distance = UInt64(try amount(&r)), carried = try amount(&r)
        let entries = [UInt8](UnsafeRawBufferPointer(rebasing: e.value[r.offset...]))
        var n = 0, last = at
        try walk(entries, first: at) { s, _ in
            n += 1
            last = s
        }
        guard distance <= at, let stored = try txn.get(db, key: p + (at - distance).bigEndianBytes + [keyframeSuffix]) else { throw ByteReader.Truncated() }
        let keyframe = try stored.withUnsafeBytes { (at - distance, try CompressedValue.size($0), try Keyframe(try CompressedValue.decode($0))) }
        return Tail(keyframe: keyframe, open: (at, carried, entries, n), last: last)
    }

    /// Stores what an event changed: `changed`, the rows of the paths whose counts moved (their
    /// `last` this seq), into `field-now`; `shapes`, how many more (or fewer) items and details
    /// have each shape, into the source's history: an entry in the open block, or a keyframe.
    static func record(_ changed: [Now], shapes: [[UInt8]: Int], source: String, seq: UInt64, _ ctx: ProjectionContext) throws {
        let txn = ctx.transaction, tables = ctx.tables
        let p = prefix(source, tables)
        for row in changed { _ = try txn.put(tables[now], key: p + tables.text(row.path), value: row.bytes) }
        let moved = shapes.filter { $0.value != 0 }
        guard !moved.isEmpty else { return }
        let c = try txn.cursor(tables[history])
        do {
            let tail = try tail(p, c, txn, tables[history])
            if let tail {
                guard tail.last < seq else { throw ByteReader.Truncated() }
                let entry = entry(moved, seq: seq, tail)
                if tail.carried + entry.count <= keyframeFactor * tail.keyframe.size {
                    var block = ByteWriter(capacity: 16 + (tail.open?.entries.count ?? 0) + entry.count)
                    block.u8(openMark)
                    if let open = tail.open, tail.continues {
                        block.varint(open.first - tail.keyframe.seq)
                        block.varint(open.carried)
                        block.raw(open.entries)
                        block.raw(entry)
                        try put(c, p, open.first, blockSuffix, block.bytes)
                    } else {
                        if let open = tail.open { try put(c, p, open.first, blockSuffix, CompressedValue.encode(open.entries)) }
                        block.varint(seq - tail.keyframe.seq)
                        block.varint(tail.carried)
                        block.raw(entry)
                        try put(c, p, seq, blockSuffix, block.bytes)
                    }
                    return
                }
            }
            // A keyframe after this event, which closes the open block.
            var counts = try span(p, asOf: .max, c)?.counts(upTo: .max) ?? [:]
            for (ref, change) in moved { counts[ref, default: 0] += change }
            guard counts.values.allSatisfy({ $0 >= 0 }) else { throw ByteReader.Truncated() }
            // A shape no document has now stays numbered: the items of a real scraping history
            // take one of its 27 shapes after another in and out, and a number is a byte where a
            // reference is 16. Unless that would keep more than `keptShapes`.
            if counts.count > keptShapes { counts = counts.filter { $0.value > 0 } }
            var paths: [(path: String, seq: UInt64)] = []
            try forEachRow(source: source, txn, tables) { paths.append(($0.path, $0.counts.last)) }
            let frame = Keyframe(
                shapes: counts.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { ($0.key, $0.value) },
                last: paths.sorted { $0.path < $1.path })
            if let open = tail?.open { try put(c, p, open.first, blockSuffix, CompressedValue.encode(open.entries)) }
            try put(c, p, seq, keyframeSuffix, CompressedValue.encode(frame.bytes))
        } catch is ByteReader.Truncated {
            throw damaged()
        }
    }

    /// An event's entry after `tail`: the keyframe's shapes by number + 1, a shape it does not
    /// have as 0 and the reference.
    private static func entry(_ moved: [[UInt8]: Int], seq: UInt64, _ tail: Tail) -> [UInt8] {
        let numbers = Dictionary(tail.keyframe.frame.shapes.enumerated().map { ($1.ref, $0) }, uniquingKeysWith: { a, _ in a })
        var w = ByteWriter(capacity: 4 + 4 * moved.count)
        w.varint(tail.continues ? seq - tail.last : 0)
        w.varint(moved.count)
        let coded = moved.map { (code: numbers[$0.key].map { $0 + 1 } ?? 0, ref: $0.key, change: $0.value) }
        for c in coded.sorted(by: { $0.code != $1.code ? $0.code < $1.code : $0.ref.lexicographicallyPrecedes($1.ref) }) {
            w.varint(c.code)
            if c.code == 0 { w.raw(c.ref) }
            w.zigzag(Int64(c.change))
        }
        return w.bytes
    }

    private static func put(_ c: Cursor, _ prefix: [UInt8], _ seq: UInt64, _ suffix: UInt8, _ value: [UInt8]) throws {
        try (prefix + seq.bigEndianBytes + [suffix]).withUnsafeBytes { k in try value.withUnsafeBytes { try c.put(key: k, value: $0) } }
    }

    /// A varint size of bytes stored elsewhere (``ByteReader/count(limit:)`` wants them to follow).
    private static func amount(_ r: inout ByteReader) throws -> Int {
        let v = try r.varint()
        guard v <= 1 << 30 else { throw ByteReader.Truncated() }
        return Int(v)
    }

    /// Every path of `source` with its counts after the event at `seq`: the shapes' counts of
    /// the keyframe at or before it, the changes after it up to `seq`, each shape's paths and
    /// types added up.
    static func counts(source: String, asOf seq: UInt64, _ reader: DocumentReader) throws -> [String: Counts] {
        do {
            guard let span = try span(prefix(source, reader.tables), asOf: seq, try reader.transaction.cursor(reader.tables[history])) else { return [:] }
            var byPath: [[UInt8]: [String: Set<String>]] = [:]
            func paths(_ ref: [UInt8]) throws -> [String: Set<String>] {
                if let p = byPath[ref] { return p }
                let p = try SchemaProjection.stored(reader, ref: ref.hex).byPath
                byPath[ref] = p
                return p
            }
            var last = Dictionary(span.keyframe.last.map { ($0.path, $0.seq) }, uniquingKeysWith: { a, _ in a })
            let counts = try span.counts(upTo: seq) { s, changes in
                // The paths whose counts this event moved: the changes of its shapes, summed.
                var net: [String: Counts] = [:]
                for (ref, change) in changes {
                    for (path, types) in try paths(ref) { net[path, default: Counts()].add(types, times: change) }
                }
                for (path, c) in net where c.values.contains(where: { $0 != 0 }) { last[path] = s }
            }
            var out: [String: Counts] = [:]
            for (path, s) in last { out[path] = Counts(last: s) }
            for (ref, n) in counts where n > 0 {
                for (path, types) in try paths(ref) { out[path, default: Counts()].add(types, times: n) }
            }
            return out
        } catch is ByteReader.Truncated {
            throw damaged()
        }
    }

    /// Calls `body` with each event's seq and changes (the shape's number in the keyframe, or
    /// its reference when it has none; the change) in `entries`, a block starting at seq `first`.
    fileprivate static func walk(_ entries: [UInt8], first: UInt64, _ body: (UInt64, [(number: Int, ref: [UInt8]?, change: Int)]) throws -> Void) throws {
        try entries.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            var seq = first, n = 0
            while !r.isAtEnd {
                let gap = try r.varint()
                guard n == 0 ? gap == 0 : gap > 0, !seq.addingReportingOverflow(gap).overflow else { throw ByteReader.Truncated() }
                seq += gap
                n += 1
                let k = try r.count()
                var changes: [(number: Int, ref: [UInt8]?, change: Int)] = []
                changes.reserveCapacity(k)
                for _ in 0..<k {
                    let code = try r.varint()
                    let ref = code == 0 ? try r.bytes(16) : nil
                    let change = try r.zigzag()
                    guard change != 0, code <= UInt64(Int.max), change.magnitude <= UInt64(Int.max) else { throw ByteReader.Truncated() }
                    changes.append((code == 0 ? 0 : Int(code - 1), ref, Int(change)))
                }
                try body(seq, changes)
            }
        }
    }
}
