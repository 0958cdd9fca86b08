public import LMDB

/// One read snapshot of the log: events, their bodies and projection tables as of one moment,
/// so a read that needs several of them (a recorded response: its index row, its event, its
/// body) sees them consistently while another process appends.
public struct LogSnapshot {
    public let transaction: Transaction
    let schema: LogSchema
    let store: EventStore

    /// The log's last seq in this snapshot (0 when empty).
    public func head() throws -> UInt64 { try LogHead.read(transaction, schema).seq }

    /// The event with this seq, if any.
    public func event(seq: UInt64) throws -> RecordedEvent? {
        try schema.event(at: seq, transaction)
    }

    /// The event with this id, if any.
    public func event(id: String) throws -> RecordedEvent? {
        guard let seq = try schema.withIDKey(id, { try transaction.get(schema.ids, key: $0).map { UInt64(bigEndianBytes: $0) } }) else { return nil }
        return try event(seq: seq)
    }

    /// The events after `seq`, at most `limit`, in seq order.
    public func events(after seq: UInt64, limit: Int) throws -> [RecordedEvent] {
        try EventQuery.run(EventQuery(fromSeq: seq + 1, limit: limit), transaction, schema)
    }

    /// The body of an event, decompressed (with a pooled zstd context); nil if it has none.
    public func payload(of event: RecordedEvent) throws -> [UInt8]? {
        try ZstdContext.pooled { try PayloadSource(schema: schema, zstd: $0).body(of: event, in: transaction) }
    }

    /// The seq of the event that rewrote (erased) this event's body, or nil.
    public func rewrittenBy(_ event: RecordedEvent) throws -> UInt64? {
        guard let ref = event.payload else { return nil }
        return try schema.rewrite(of: ref.hash, transaction)?.by
    }

    /// The last seq whose effective time is at or before `time` (``EventStore/seq(asOf:)``).
    public func seq(asOf time: Timestamp) throws -> UInt64 { try LogSchema.seq(asOf: time, transaction, schema) }

    /// The tables of projection `name`.
    public func tables(of name: String) throws -> TableSet { try store.tables(of: name) }
}

extension EventStore {
    /// Runs `body` in one read snapshot (``read(_:)`` with the log's readers at hand).
    public func snapshot<T: Sendable>(_ body: @escaping @Sendable (LogSnapshot) throws -> T) async throws -> T {
        let schema = self.schema
        return try await read { [self] txn in try body(LogSnapshot(transaction: txn, schema: schema, store: self)) }
    }
}
