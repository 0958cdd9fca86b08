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
        let events = try txn.cursor(s.events)
        func load(_ seq: UInt64) throws -> RecordedEvent? {
            guard let v = try txn.get(s.events, key: seq.bigEndianBytes) else { return nil }
            return try v.withUnsafeBytes { try Envelope.decode($0) }
        }
        if let indexName = q.stream ?? q.type {
            // Walk the index (stream preferred), filtering by type when both are given.
            let db = q.stream != nil ? s.byStream : s.byType
            let prefix = Array(indexName.utf8) + [0]
            let c = try txn.cursor(db)
            var entry: Cursor.Entry?
            if q.descending {
                entry = try c.seek(atMost: LogSchema.indexKey(indexName, q.toSeq))
            } else {
                entry = try c.seek(atLeast: LogSchema.indexKey(indexName, q.fromSeq))
            }
            while let e = entry, e.key.hasPrefix(prefix), out.count < q.limit {
                let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]))
                if seq < q.fromSeq || seq > q.toSeq { break }
                if let ev = try load(seq), q.stream == nil || q.type == nil || ev.type == q.type { out.append(ev) }
                entry = q.descending ? try c.previous() : try c.next()
            }
            return out
        }
        var entry = q.descending ? try events.seek(atMost: q.toSeq.bigEndianBytes) : try events.seek(atLeast: q.fromSeq.bigEndianBytes)
        while let e = entry, out.count < q.limit {
            let seq = UInt64(bigEndianBytes: e.key)
            if seq < q.fromSeq || seq > q.toSeq { break }
            out.append(try Envelope.decode(e.value))
            entry = q.descending ? try events.previous() : try events.next()
        }
        return out
    }
}
