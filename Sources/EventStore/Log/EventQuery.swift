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
        if let stream = q.stream, let type = q.type {
            // Both indexes, joined on their seqs: an event is decoded only when it is in both. A
            // rare type in a long stream (a retention among a thousand pages) costs a few seeks,
            // not a decode of the whole stream.
            for seq in try joined(s.byStream, stream, s.byType, type, from: q.fromSeq, to: q.toSeq, descending: q.descending, txn) {
                guard out.count < q.limit else { break }
                if let event = try s.event(at: seq, txn) { out.append(event) }
            }
            return out
        }
        if let indexName = q.stream ?? q.type {
            try walk(q.stream != nil ? s.byStream : s.byType, indexName, from: q.fromSeq, to: q.toSeq, descending: q.descending, txn, s) { ev in
                out.append(ev)
                return out.count < q.limit
            }
            return out
        }
        var events = try EnvelopeCursor(s, txn)
        var entry = q.descending ? try events.seek(atMost: q.toSeq) : try events.seek(atLeast: q.fromSeq)
        while let (seq, envelope) = entry, out.count < q.limit {
            if seq < q.fromSeq || seq > q.toSeq { break }
            out.append(try Envelope.decode(envelope))
            entry = q.descending ? try events.previous() : try events.next()
        }
        return out
    }

    /// The seqs in `from...to` that both `a`'s entry `nameA` and `b`'s entry `nameB` index, in
    /// seq order or newest first: each cursor seeks to the other's seq (a leapfrog join), so the
    /// cost follows the shorter list, not the longer.
    static func joined(
        _ a: Database, _ nameA: String, _ b: Database, _ nameB: String, from: UInt64, to: UInt64, descending: Bool, _ txn: Transaction
    ) throws -> [UInt64] {
        guard from <= to else { return [] }
        let cursors = [try IndexCursor(a, name: nameA, txn), try IndexCursor(b, name: nameB, txn)]
        // The seq of the first entry at or past `seq` (in the walk's direction) under cursor i.
        func seek(_ i: Int, _ seq: UInt64) throws -> UInt64? {
            guard let found = descending ? try cursors[i].seek(atMost: seq) : try cursors[i].seek(atLeast: seq) else { return nil }
            return found >= from && found <= to ? found : nil
        }
        var out: [UInt64] = []
        guard var target = try seek(0, descending ? to : from) else { return [] }
        var i = 1
        while true {
            guard let found = try seek(i, target) else { return out }
            if found == target {
                out.append(found)
                guard descending ? found > from : found < to, let next = try seek(0, descending ? found - 1 : found + 1) else { return out }
                target = next
                i = 1
            } else {
                target = found
                i = 1 - i
            }
        }
    }

    /// Visits the events `name` indexes in `db` (the stream or the type index) with seqs in
    /// `from...to`, in seq order or newest first, until `visit` returns false.
    static func walk(
        _ db: Database, _ name: String, from: UInt64, to: UInt64, descending: Bool, _ txn: Transaction, _ s: LogSchema,
        _ visit: (RecordedEvent) throws -> Bool
    ) throws {
        guard from <= to else { return }
        let c = try IndexCursor(db, name: name, txn)
        var entry = descending ? try c.seek(atMost: to) : try c.seek(atLeast: from)
        while let seq = entry {
            if seq < from || seq > to { break }
            if let event = try s.event(at: seq, txn), try !visit(event) {
                return
            }
            entry = descending ? try c.previous() : try c.next()
        }
    }
}
