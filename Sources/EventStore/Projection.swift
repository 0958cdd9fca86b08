public import LMDB

/// Folds events into tables of its own. Like a reducer, `apply` is a pure function of the event
/// and the projection's tables: it does no other I/O and reads no clock, so a rebuild from the
/// log always reproduces the same tables.
///
/// Its checkpoint (the last applied seq) is written in the same transaction as its table writes.
/// Bump `version` whenever `apply` or the table layout changes: on open the store rebuilds a
/// projection whose stored version differs.
public protocol Projection: Sendable {
    /// Stable name; also names the LMDB databases `p/<name>/<table>`.
    var name: String { get }
    var version: Int { get }
    /// The tables it owns.
    var tables: [String] { get }
    /// Applies one event. Throwing quarantines the event for this projection (with the error's
    /// description as the reason) and leaves the tables as they were before the event; storage
    /// errors are not quarantined but abort the whole batch.
    func apply(_ event: RecordedEvent, in context: ProjectionContext) throws
}

/// The database handles of one projection's tables in one environment.
public struct TableSet: Sendable {
    let databases: [String: Database]

    /// The table named `name`. Traps on a table the projection did not declare: a programming error.
    public subscript(name: String) -> Database {
        guard let db = databases[name] else { preconditionFailure("table \(name) was not declared by its projection") }
        return db
    }

    static func databaseName(projection: String, table: String) -> String { "p/\(projection)/\(table)" }
}

/// What a projection may touch while applying an event: its tables, inside the batch's write
/// transaction, and the event's payload.
public struct ProjectionContext {
    public let transaction: Transaction
    public let tables: TableSet
    let payloads: PayloadSource

    /// The event's body (decompressed), or nil when it has none.
    public func payload(of event: RecordedEvent) throws -> [UInt8]? {
        try payloads.body(of: event, in: transaction)
    }
}

/// Supplies bodies of events: from the batch being appended, else from the blob database.
final class PayloadSource {
    private let blobs: Database
    private let zstd: ZstdContext
    private var pending: [UInt64: [UInt8]] = [:]

    init(blobs: Database, zstd: ZstdContext = ZstdContext()) {
        self.blobs = blobs
        self.zstd = zstd
    }

    func stage(_ body: [UInt8], for seq: UInt64) { pending[seq] = body }
    func clear() { pending.removeAll(keepingCapacity: true) }

    func body(of event: RecordedEvent, in txn: Transaction) throws -> [UInt8]? {
        guard let ref = event.payload else { return nil }
        if let b = pending[event.seq] { return b }
        let stored = try ref.hash.withUnsafeBytes { try txn.get(blobs, key: $0) }
        guard let stored else {
            throw EventStoreError.corrupted("the body \(ref.hashHex.prefix(16)) of event \(event.seq) is missing from the blob store; run `strata verify`")
        }
        return try BlobCodec.decode(stored, context: zstd)
    }
}
