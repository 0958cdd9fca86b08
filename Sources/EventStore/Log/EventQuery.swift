import LMDB

/// A filter over the log. Uses the stream or type index when one is given.
public struct EventQuery: Sendable, Hashable {
    public var stream: String?
    public var type: String?
    /// Inclusive lower bound.
    public var fromSeq: UInt64
    /// Inclusive upper bound.
    public var toSeq: UInt64
    public var limit: Int
    /// Newest first when true.
    public var descending: Bool

    public init(stream: String? = nil, type: String? = nil, fromSeq: UInt64 = 1, toSeq: UInt64 = .max, limit: Int = .max, descending: Bool = false) {
        self.stream = stream
        self.type = type
        self.fromSeq = fromSeq
        self.toSeq = toSeq
        self.limit = limit
        self.descending = descending
    }

    static func run(_ q: EventQuery, _ txn: Transaction, _ s: LogSchema) throws -> [RecordedEvent] {
        guard q.limit > 0, q.fromSeq <= q.toSeq else { return [] }
        var out: [RecordedEvent] = []
        if let indexName = q.stream ?? q.type {
            // Walk the index (stream preferred), filtering by type when both are given.
            try walk(q.stream != nil ? s.byStream : s.byType, indexName, from: q.fromSeq, to: q.toSeq, descending: q.descending, txn, s) { ev in
                if q.stream == nil || q.type == nil || ev.type == q.type { out.append(ev) }
                return out.count < q.limit
            }
            return out
        }
        let events = try txn.cursor(s.events)
        var entry = q.descending ? try events.seek(atMost: q.toSeq.bigEndianBytes) : try events.seek(atLeast: q.fromSeq.bigEndianBytes)
        while let e = entry, out.count < q.limit {
            let seq = UInt64(bigEndianBytes: e.key)
            if seq < q.fromSeq || seq > q.toSeq { break }
            out.append(try Envelope.decode(s.envelope(e.value, txn)))
            entry = q.descending ? try events.previous() : try events.next()
        }
        return out
    }

    /// Visits the events `name` indexes in `db` (the stream or the type index) with seqs in
    /// `from...to`, in seq order or newest first, until `visit` returns false.
    static func walk(
        _ db: Database, _ name: String, from: UInt64, to: UInt64, descending: Bool, _ txn: Transaction, _ s: LogSchema,
        _ visit: (RecordedEvent) throws -> Bool
    ) throws {
        guard from <= to else { return }
        let prefix = Array(name.utf8) + [0]
        let c = try txn.cursor(db)
        var entry = descending ? try c.seek(atMost: LogSchema.indexKey(name, to)) : try c.seek(atLeast: LogSchema.indexKey(name, from))
        while let e = entry, e.key.hasPrefix(prefix) {
            let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]))
            if seq < from || seq > to { break }
            if let v = try withUnsafeBytes(of: seq.bigEndian, { try txn.get(s.events, key: $0) }),
                try !visit(try Envelope.decode(s.envelope(v, txn)))
            {
                return
            }
            entry = descending ? try c.previous() : try c.next()
        }
    }
}
