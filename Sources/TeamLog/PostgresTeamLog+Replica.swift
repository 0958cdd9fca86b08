package import EventStore
import PostgresNIO

/// Each store as a replica of the log in the log's order, plus an outbox of its own events.
///
/// A pull appends the log's events after the ones the store holds. When the store appended
/// events of its own that other nodes' pushes overtook (B fetched while A pushed), the store
/// then holds the log's events in another order than the log, so its seqs are not the log's and
/// `--as-of SEQ` would mean something else on each node. ``alignment(of:from:position:)`` finds
/// how far the store's seqs hold the log's events; ``replica(of:inOrder:position:into:)``
/// writes, in a new directory, the store as it should be: its events up to there as they are
/// (same envelopes and hashes), then the log's events up to the pulled position in the log's
/// order, then the store's own events the log does not hold yet (the outbox), in the store's
/// order. The caller puts that copy in the store's place in one step
/// (``EventStore/swap(with:mark:carrying:when:)``). Afterwards seq N of the store is seq N of
/// the log for every N up to the position, on every node, and the projections fold the same
/// events in the same order.
extension PostgresTeamLog {
    /// The largest seq up to which the store's events are the log's events at the same seqs,
    /// checked from `known` (a seq known to be in order: 0, or the last result) to `position`.
    /// `position` when the store is a replica up to there.
    package func alignment(of store: EventStore, from known: UInt64, position: UInt64) async throws -> UInt64 {
        var checked = min(known, position)
        while checked < position {
            let theirs = try await eventIDs(after: checked, limit: Int(min(10_000, position - checked)))
            guard !theirs.isEmpty else { return checked }
            let mine = try await store.events(EventQuery(fromSeq: checked + 1, limit: theirs.count))
            for (i, (seq, id)) in theirs.enumerated() {
                guard i < mine.count, mine[i].seq == seq, mine[i].id == id else { return checked }
                checked = seq
            }
        }
        return checked
    }

    /// What ``replica(of:inOrder:position:into:)`` wrote.
    package struct Replica: Sendable {
        /// The copy, in the log's order up to `position`, then the outbox.
        package var store: EventStore
        /// The store's events the copy holds: every one up to this seq of the store's.
        package var copiedUpTo: UInt64
        /// The log's events put in the log's order after the part kept as it was.
        package var reordered: Int
        /// The store's own events after them, not in the log yet.
        package var outbox: Int
        /// The log's event ids after the part kept as it was, up to the position.
        var logIDs: Set<String>
    }

    /// Writes the store in the log's order into a new store at `directory` (which must not
    /// exist): its events up to `inOrder` as they are, the log's events after that up to
    /// `position` in the log's order, then the store's own events the log does not hold.
    /// - Throws: ``TeamLogError`` `.corrupted` when the store lacks one of the log's events up to
    ///   `position` (pull first).
    package func replica(of store: EventStore, inOrder: UInt64, position: UInt64, into directory: String) async throws -> Replica {
        let copy = try await store.copy(upTo: inOrder, into: directory)
        var logIDs = Set<String>()
        // Pipelined: the next batch's ids, events and bodies are read while this one is appended.
        var current = try await logBatch(after: inOrder, upTo: position, from: store)
        while let batch = current {
            async let following = batch.last < position ? logBatch(after: batch.last, upTo: position, from: store) : nil
            do {
                _ = try await copy.append(batch.events)
            } catch {
                _ = try? await following
                throw error
            }
            logIDs.formUnion(batch.events.map(\.id))
            current = try await following
        }
        var replica = Replica(store: copy, copiedUpTo: inOrder, reordered: logIDs.count, outbox: 0, logIDs: logIDs)
        try await appendOutbox(of: store, to: &replica)
        return replica
    }

    /// The log's events after `seq` (at most 1,000, none past `position`) as the store holds
    /// them, ready to append again; nil when there are none.
    private func logBatch(after seq: UInt64, upTo position: UInt64, from store: EventStore) async throws -> (events: [NewEvent], last: UInt64)? {
        guard seq < position else { return nil }
        let ids = try await eventIDs(after: seq, limit: Int(min(1_000, position - seq))).map(\.id)
        guard !ids.isEmpty else { return nil }
        // One read snapshot per batch: the events and their bodies.
        let events = try await store.snapshot { snap in
            try ids.map { id in
                guard let e = try snap.event(id: id) else {
                    throw TeamLogError(.corrupted, "this store lacks the log's event \(id), which it pulled; pull again before it is put in the log's order")
                }
                return try Self.again(e, body: try snap.payload(of: e))
            }
        }
        return (events, seq + UInt64(ids.count))
    }

    /// Appends to the replica the store's events after the ones it copied that are not the
    /// log's (the outbox, in the store's order): after the replica was written, and again when a
    /// swap found the store's head moved.
    package func appendOutbox(of store: EventStore, to replica: inout Replica) async throws {
        while true {
            let (from, skip) = (replica.copiedUpTo, replica.logIDs)
            let (last, batch) = try await store.snapshot { snap -> (UInt64?, [NewEvent]) in
                let events = try snap.events(after: from, limit: 1_000)
                return (events.last?.seq, try events.filter { !skip.contains($0.id) }.map { try Self.again($0, body: try snap.payload(of: $0)) })
            }
            guard let last else { return }
            if !batch.isEmpty { _ = try await replica.store.append(batch) }
            replica.outbox += batch.count
            replica.copiedUpTo = last
        }
    }

    /// A stored event to append again elsewhere: the same id, type, times, metadata and body.
    static func again(_ e: RecordedEvent, body: [UInt8]?) throws -> NewEvent {
        if e.payload != nil, body == nil {
            throw TeamLogError(.corrupted, "the body of event \(e.seq) is missing from the store")
        }
        return NewEvent(
            id: e.id, type: e.type, schemaVersion: e.schemaVersion, recordedAt: e.recordedAt, stream: e.stream,
            metadata: e.metadata.map { ($0.key, $0.value) }, payload: body)
    }
}
