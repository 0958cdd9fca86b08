import LMDB

/// What ``KeyedDocumentProjection`` remembers across the events of one context (one batch or
/// chunk inside one transaction) instead of looking it up once per event: the context keeps it
/// (``ProjectionContext/state(_:)``) and drops it with the transaction.
final class DocumentFold {
    /// The indexed paths, per collection.
    var indexedPaths: [String: [String]] = [:]
    /// The index counters' moves within the event being applied, by value prefix (written at
    /// the event's end).
    var indexCounts: [[UInt8]: Int] = [:]
    /// Cursors over `current`, `history` and `history-packed`, opened once per context: a record is read and written back, and a closed row read, packed
    /// and replaced by its pointer with the key's new row written next to it, each through one
    /// cursor, without a search from the root for each step. LMDB frees a write transaction's
    /// cursors when it ends, so these must go first: a context (and its memo) lives inside the
    /// call that folds into its transaction, never beyond it.
    var currentCursor: Cursor?
    var historyCursor: Cursor?
    var packedCursor: Cursor?
    /// The cursor over `counts` (read and written once per change).
    var countsCursor: Cursor?
    /// The number the next row packed into `history-packed` takes (read once per context).
    var nextPacked: UInt64?
    /// The rows of `history-packed` waiting for their block, as number 0 there holds them (read
    /// once per context).
    var pendingBlock: KeyedDocumentProjection.HistoryRow.Pending?

    /// Open rows of `history`, held instead of written while `holdsRows`; the projection writes them before its transaction commits
    /// (``KeyedDocumentProjection/finish(_:)``).
    let held = HeldRows()
    /// Only the built-in documents projection holds rows: other extractors may read the tables
    /// through the context's transaction themselves.
    var holdsRows = false
    /// The keys the event being applied wrote versions of, per collection (`varint n, n bytes`
    /// each), when the projection keeps the change order (written at the event's end).
    var changeOrder: [(collection: [UInt8], keys: [UInt8])] = []
}

extension ProjectionContext {
    /// The fold's state in this context.
    var memo: DocumentFold { state(DocumentFold.init) }
}
