public import EventStore
import Foundation
import LMDB

/// One version of an item's list entry or detail met by a walk of a span in log order
/// (``ItemTables/changes(source:after:upTo:kinds:batch:_:)``): the item after it (nil once
/// removed) and before it (nil before it was added or while it was removed).
public struct ItemChangeEntity: Sendable, Hashable {
    public var id: String
    public var seq: UInt64
    public var recordedAt: Timestamp
    public var kind: ChangeKind
    public var changes: [PatchOperation]
    public var after: JSONValue?
    public var before: JSONValue?
    public var origin: ItemVersionEntity.Origin
}

extension ItemTables {
    /// Every version of a source's items written after `after` up to `upTo`, in log order: seq
    /// by seq, and within a seq the list entries then the details, each by id in natural order
    /// (numbers by value, then text). Handed to `body` in batches of at most `batch`, as they
    /// are read; `body` returns false to stop. Versions of a kind outside `kinds` are passed over
    /// without being read; versions `keep` refuses (given the item after and before) are left
    /// out before their field changes are worked out. A version that only stored values again
    /// redacted anew (``RedactionRestore``) is no change and is left out.
    ///
    /// The walk reads the span's `changed` rows, then each wanted version and the one before it:
    /// its cost follows the span's changes, not the source's size or its items' histories.
    /// Returns false, having walked nothing, when log order is not the order the versions were
    /// observed in (a backfilled source, ``ObservationTimeline``): then the caller orders each
    /// item's history itself (``history(source:id:upTo:observedBy:)``).
    public func changes(
        source: String, after: UInt64, upTo: UInt64, kinds: Set<ChangeKind>, batch: Int = 512,
        keeping keep: @escaping @Sendable (_ after: JSONValue?, _ before: JSONValue?) -> Bool = { _, _ in true },
        _ body: @escaping @Sendable ([ItemChangeEntity]) -> Bool
    ) async throws -> Bool {
        guard try await !store.timeline({ try $0.isBackfilled(stream: source) }) else { return false }
        return try await store.read { [store] txn in
            let readers = [
                (ItemVersionEntity.Origin.list, DocumentReader(transaction: txn, tables: try store.tables(of: "items"))),
                (.detail, DocumentReader(transaction: txn, tables: try store.tables(of: "details")))
            ]
            var walks: [ChangeOrderWalk] = []
            for (_, reader) in readers {
                guard let walk = try reader.changeOrder(collection: source, after: after, upTo: upTo) else { return false }
                walks.append(walk)
            }
            // A version that only stored values again redacted anew is no change (as in diffs,
            // feeds and alerts); most stores have none to look up.
            let restores = try txn.stat(readers[0].1.tables["restored"]).entries > 0
            // Every kind is listed (a version passed over must be forgotten below); only the
            // wanted ones are read.
            var heads = try walks.indices.map { try walks[$0].next() }
            // The last version read of each key, per origin: usually the one before the key's
            // next change, which is then not read again. Bounded: past it, versions are read.
            var last: [[String: DocumentVersion]] = [[:], [:]]
            var out: [ItemChangeEntity] = []
            // The first batches are small and grow to `batch`: a reader that wants the first
            // 200 changes gets them without 300 more read first.
            var size = min(batch, 32)
            out.reserveCapacity(batch)
            // A batch goes when full, at the end of an event's versions, or 50 ms after the last
            // went: a rare match among many versions is not held back.
            var sent = ContinuousClock.now
            func send() -> Bool {
                guard body(out) else { return false }
                out.removeAll(keepingCapacity: true)
                sent = ContinuousClock.now
                size = min(batch, size * 2)
                return true
            }
            while let seq = heads.compactMap({ $0?.seq }).min() {
                for i in walks.indices {
                    guard var row = heads[i]?.row, heads[i]?.seq == seq else { continue }
                    let (origin, reader) = readers[i]
                    // One version: false when the reader wants no more.
                    func visit(_ key: String, _ kind: ChangeKind) throws -> Bool {
                        if restores, origin == .list, kind == .changed, try RedactionRestore.reason(source: source, id: key, seq: seq, reader) != nil {
                            // Not read: the key's last read is no longer the version before its next.
                            last[i].removeValue(forKey: key)
                            return true
                        }
                        if last[i].count >= 1 << 17 { last[i].removeAll(keepingCapacity: true) }
                        guard let change = try Self.change(source, key, kind, at: seq, origin, reader, &last[i], keep) else { return true }
                        out.append(change)
                        return out.count < size && ContinuousClock.now - sent <= .milliseconds(50) || send()
                    }
                    // The wanted versions in natural id order, their keys decoded only when
                    // wanted; a key written twice by one event once (its entries are next to each
                    // other). A version passed over leaves the key's last read stale: forgotten.
                    if reader.tables.isEncrypted {
                        // Rows hold digests, in no order a reader can use: sorted here.
                        var wanted: [(key: String, kind: ChangeKind)] = []
                        while let (bytes, kind) = try row.next() {
                            let key = try reader.tables.reveal(bytes, in: txn)
                            if kinds.contains(kind) { wanted.append((key, kind)) } else { last[i].removeValue(forKey: key) }
                        }
                        wanted = wanted.map { (KeyedDocumentProjection.naturalKey($0.key), $0) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }.map(\.1)
                        for (n, (key, kind)) in wanted.enumerated() where n == 0 || wanted[n - 1].key != key {
                            guard try visit(key, kind) else { return true }
                        }
                    } else {
                        var previous: UnsafeRawBufferPointer?
                        while let (bytes, kind) = try row.next() {
                            guard kinds.contains(kind) else {
                                if !last[i].isEmpty { last[i].removeValue(forKey: try reader.tables.reveal(bytes, in: txn)) }
                                continue
                            }
                            if let previous, previous.elementsEqual(bytes) { continue }
                            previous = bytes
                            guard try visit(try reader.tables.reveal(bytes, in: txn), kind) else { return true }
                        }
                    }
                    heads[i] = try walks[i].next()
                }
                if !out.isEmpty, !send() { return true }
            }
            return true
        }
    }

    /// The version of `key` at `seq` with what it changed: its kind as the fold stored it (in log
    /// order a version is written only when the document changed, so no version is a
    /// restatement), field changes from the version before, and the item before and after. The
    /// version before is read only for a change (it is the item before) and, once `keep` took
    /// it, for a return (its changes are against the last state the item had).
    static func change(
        _ source: String, _ key: String, _ kind: ChangeKind, at seq: UInt64, _ origin: ItemVersionEntity.Origin, _ reader: DocumentReader,
        _ last: inout [String: DocumentVersion], _ keep: (JSONValue?, JSONValue?) -> Bool
    ) throws -> ItemChangeEntity? {
        guard let v = try reader.version(collection: source, key: key, asOf: seq), v.seq == seq else { return nil }
        // The one the walk read last of the key, when it holds one (the walk forgets a key whose
        // version it passes over), else read.
        func previous() throws -> DocumentVersion? {
            if let held = last[key], held.seq < seq { return held }
            return seq == 0 ? nil : try reader.version(collection: source, key: key, asOf: seq - 1)
        }
        var before: DocumentVersion?
        if kind == .changed {
            guard let p = try previous() else {
                throw DocumentError("the version of \(source)/\(key.prefix(64)) before seq \(seq) is missing from history: run strata verify")
            }
            before = p
        }
        last[key] = v
        let after: JSONValue? = kind == .removed ? nil : v.document
        // A removal's version holds the last document the item had.
        guard keep(after, kind == .removed ? v.document : before?.document) else { return nil }
        var changes: [PatchOperation] = []
        if kind == .changed {
            changes = before!.document.diff(to: v.document)
        } else if kind == .reappeared, let gone = try reader.version(collection: source, key: key, asOf: seq - 1) {
            changes = gone.document.diff(to: v.document)
        }
        return ItemChangeEntity(
            id: key, seq: seq, recordedAt: v.recordedAt, kind: kind, changes: changes, after: after,
            before: kind == .removed ? v.document : before?.document, origin: origin)
    }
}
