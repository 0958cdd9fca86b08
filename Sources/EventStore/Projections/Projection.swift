import Foundation
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
    /// Tables an earlier version kept and this one does not: emptied when the store opens.
    var retiredTables: [String] { get }
    /// Tables whose values too large for half a page are kept as page-filling chunks
    /// (``LMDB/ChunkTable``): no value of theirs may start with 0xFD, the heads' mark.
    var chunkedTables: Set<String> { get }
    /// The event types `apply` acts on, or nil for every type. Events of other types are not
    /// decoded for it during a rebuild or catch-up and not handed to it at append; declaring
    /// them lets a rebuild skip most of the log for a projection that reads a few types.
    var eventTypes: Set<String>? { get }
    /// The event types whose whole body it stores as a JSON document (``DocumentOperation/putJSON``
    /// with the event's payload). Their canonical form is worked out ahead, off the writer's
    /// critical path: on a second core while a batch is prepared or the next chunk is read.
    var documentTypes: Set<String> { get }
    /// Applies one event. Throwing quarantines the event for this projection (with the error's
    /// description as the reason) and leaves the tables as they were before the event; storage
    /// errors are not quarantined but abort the whole batch.
    func apply(_ event: RecordedEvent, in context: ProjectionContext) throws
    /// Writes what `apply` held across the context's events (rows kept in memory while a batch
    /// folds, counters): called once they are applied, before anything else reads the tables or
    /// the transaction commits. Nothing by default.
    func finish(_ context: ProjectionContext) throws
}

extension Projection {
    public var retiredTables: [String] { [] }
    public var chunkedTables: Set<String> { [] }
    public var eventTypes: Set<String>? { nil }
    public var documentTypes: Set<String> { [] }
    public func finish(_ context: ProjectionContext) throws {}
}

/// A projection's type filter, compared against envelope bytes so a skipped event costs no
/// decoding.
struct EventTypeFilter {
    private let types: [[UInt8]]?

    init(_ types: Set<String>?) { self.types = types.map { $0.map { Array($0.utf8) } } }

    func accepts(_ type: UnsafeRawBufferPointer) -> Bool {
        guard let types else { return true }
        return types.contains { $0.count == type.count && $0.elementsEqual(type) }
    }

    func accepts(_ type: String) -> Bool {
        guard types != nil else { return true }
        var t = type
        return t.withUTF8 { accepts(UnsafeRawBufferPointer($0)) }
    }
}

/// The database handles of one projection's tables in one environment.
public struct TableSet: Sendable {
    let databases: [String: Database]
    /// The same, for the lookup on every put: a projection has a handful of tables, and comparing
    /// a few short names beats hashing one. Two arrays, not one of pairs: a loop over pairs
    /// copied each (its database's name and protection retained and released) on every lookup.
    private let tableNames: [String]
    private let tableList: [Database]

    /// The store's cipher when it is encrypted.
    let cipher: StoreCipher?
    /// In an encrypted store, the texts behind the digests in its keys (``text(_:)``): digest →
    /// sealed text. Cleared with the projection's tables.
    let names: Database?
    static let namesTable = "~names"
    /// The log's `bodies`, which versions kept as slices of bodies are read from
    /// (``PayloadSlice``).
    let logBodies: Database?
    /// The forms of those bodies kept across transactions (``PayloadSlice/SharedForms``), one
    /// for every projection of an open store.
    let sliceForms: PayloadSlice.SharedForms?

    init(
        databases: [String: Database], cipher: StoreCipher? = nil, names: Database? = nil, logBodies: Database? = nil,
        sliceForms: PayloadSlice.SharedForms? = nil
    ) {
        self.databases = databases
        self.cipher = cipher
        self.names = names
        self.logBodies = logBodies
        self.sliceForms = sliceForms
        let sorted = databases.sorted { $0.key < $1.key }
        tableNames = sorted.map(\.key)
        tableList = sorted.map(\.value)
    }

    /// Every database of the projection, its texts' table included.
    var all: [Database] { tableList + (names.map { [$0] } ?? []) }

    /// Whether the store is encrypted: data-derived texts in keys are digests, and the tables
    /// that order by such texts order by their digests.
    public var isEncrypted: Bool { cipher != nil }

    /// What stands for `text` (an item id, an index value, a URL) inside a key: its UTF-8 bytes,
    /// or, in an encrypted store, a 16-byte keyed digest without zero bytes (so a key keeps its
    /// `0x00`-separated layout and its whole-text lookups). See ``reveal(_:in:)``.
    public func text(_ text: String) -> [UInt8] {
        guard let cipher else { return Array(text.utf8) }
        return cipher.text(text)
    }

    /// ``text(_:)``, remembering the text so ``reveal(_:in:)`` can give it back from a key. Call
    /// it where a write makes a key that readers take texts back from.
    public func text(_ text: String, remembering txn: Transaction) throws -> [UInt8] {
        let t = self.text(text)
        if let names { _ = try txn.insert(names, key: t, value: Array(text.utf8)) }
        return t
    }

    /// The text behind `bytes` taken from a key: the bytes themselves, or the text remembered for
    /// a digest. Throws when an encrypted store has no text for it.
    public func reveal(_ bytes: UnsafeRawBufferPointer, in txn: Transaction) throws -> String {
        guard let names else { return String(decoding: bytes, as: UTF8.self) }
        guard let raw = try txn.get(names, key: bytes) else {
            throw EventStoreError.corrupted("a key's text is missing from the encrypted store's names")
        }
        return String(decoding: raw, as: UTF8.self)
    }

    /// The table named `name`. Traps on a table the projection did not declare: a programming error.
    public subscript(name: String) -> Database {
        for i in tableNames.indices where tableNames[i] == name { return tableList[i] }
        preconditionFailure("table \(name) was not declared by its projection")
    }

    /// The table named `name`, nil when the projection did not declare it.
    public func table(named name: String) -> Database? {
        tableNames.firstIndex(of: name).map { tableList[$0] }
    }

    static func databaseName(projection: String, table: String) -> String { "p/\(projection)/\(table)" }
}

/// What a projection may touch while applying an event: its tables, inside the batch's write
/// transaction, and the event's payload.
public struct ProjectionContext {
    public let transaction: Transaction
    public let tables: TableSet
    let payloads: PayloadSource
    /// What the projection keeps across the events of this context.
    private let slot = StateSlot()

    /// The event's body (decompressed), or nil when it has none.
    public func payload(of event: RecordedEvent) throws -> [UInt8]? {
        try payloads.body(of: event, in: transaction)
    }

    /// Whether the event's body was rewritten in place by an erasure
    /// (``EventStore/rewriteBodies(_:by:)``): a projection that must keep nothing of what was
    /// erased skips such an event. One lookup, and none while the store has rewritten nothing.
    public func payloadWasRewritten(_ event: RecordedEvent) throws -> Bool {
        guard let ref = event.payload else { return false }
        return try payloads.isRewritten(ref.hash, in: transaction)
    }

    /// What the projection keeps across the events of this context — cursors opened once, rows
    /// held back, counters — made by `make` on first use. A context lives for one batch (or
    /// chunk) inside one transaction and serves one projection, so the state never outlives the
    /// transaction whose cursors it may hold.
    public func state<State: AnyObject>(_ make: () -> State) -> State {
        if let value = slot.value, ObjectIdentifier(type(of: value)) == ObjectIdentifier(State.self) { return unsafeDowncast(value, to: State.self) }
        let made = make()
        slot.value = made
        return made
    }

    /// A value worked out from `event` (its body, its metadata: nothing else) once per batch or
    /// chunk and shared by every projection that folds the event in it — the items of a list
    /// page, which two projections read. `kind` names what `make` computes (with whatever
    /// parameters it takes from the event); `make` also tells roughly how many bytes the value
    /// holds, and the oldest values are let go past 64 MiB in all.
    public func shared<T>(_ event: RecordedEvent, _ kind: String, _ make: () throws -> (value: T, bytes: Int)) throws -> T {
        try payloads.shared.value(SharedValues.Key(seq: event.seq, kind: kind), make)
    }

    /// Whether `json` is the event's whole payload (the same buffer, usually: then no bytes are
    /// compared). Decided by content, so a rebuild decides as the append did.
    func isPayload(_ json: [UInt8], of event: RecordedEvent) throws -> Bool {
        try payloads.isPayload(json, of: event, in: transaction)
    }
}

/// The values behind ``ProjectionContext/shared(_:_:_:)``: one per event and kind, for the life
/// of one ``PayloadSource`` (one transaction, so a body rewritten later is never read stale).
final class SharedValues {
    struct Key: Hashable {
        var seq: UInt64
        var kind: String
    }

    static let budget = 64 << 20
    private var values = ByteBudget<Key, Any>(budget: budget)

    func value<T>(_ key: Key, _ make: () throws -> (value: T, bytes: Int)) throws -> T {
        if let value = values[key] as? T { return value }
        let made = try make()
        keep(key, made.value, bytes: made.bytes)
        return made.value
    }

    /// Holds `value` under `key`, as if a projection had worked it out (``NewEvent/shared``).
    func keep(_ key: Key, _ value: Any, bytes count: Int) {
        values.keep(value, for: key, bytes: count)
    }
}

/// The box behind ``ProjectionContext/state(_:)``.
private final class StateSlot {
    var value: AnyObject?
}

/// A body of the batch being appended, with its canonical JSON form and that form's digest when it is
/// a JSON document (worked out off the writer thread).
struct StagedBody: Sendable {
    var body: [UInt8]
    var canonical: [UInt8]?
    var digest: [UInt8]?
    /// The body's stored form (its row in the log, ``BlobCodec``), when it is at hand.
    var stored: [UInt8]?

    init(_ body: [UInt8]) { self.body = body }

    /// Works out the canonical form (nothing when the body is not JSON: the projection then
    /// canonicalizes it itself and reports why it fails).
    mutating func prepareDocument() {
        guard let c = try? JSONValue.canonicalize(body) else { return }
        canonical = c
        digest = Hashing.documentDigest(c)
    }
}

/// Supplies bodies of events: from the batch being appended, else from the blob database.
final class PayloadSource {
    let bodyIndex: BodyIndex
    let bodies: Database
    /// Bodies rewritten in place (``EventStore/rewriteBodies(_:by:)``).
    let rewritten: Database
    private let zstd: ZstdContext
    /// Bodies of the batch being appended.
    private var pending: [UInt64: StagedBody] = [:]
    /// Values worked out from events and shared by the projections folding them here.
    let shared = SharedValues()
    /// Bodies of the chunk being folded, read ahead.
    var ahead: BodyArena?
    /// Bodies of the chunk being folded, prepared on a helper thread while it folds.
    var prep: BodyPrep?

    init(schema: LogSchema, zstd: ZstdContext = ZstdContext()) {
        bodyIndex = schema.bodyIndex
        bodies = schema.bodies
        rewritten = schema.rewritten
        self.zstd = zstd
    }

    func stage(_ body: StagedBody, for seq: UInt64) { pending[seq] = body }

    /// The canonical form and digest worked out ahead for `json`, if `json` is the staged body of
    /// `event`.
    func preparedDocument(of event: RecordedEvent, json: [UInt8]) -> (canonical: [UInt8], digest: [UInt8])? {
        if let staged = pending[event.seq] {
            guard let canonical = staged.canonical, let digest = staged.digest, staged.body == json else { return nil }
            return (canonical, digest)
        }
        return ahead?.document(event.seq, matching: json) ?? prep?.document(event.seq, matching: json)
    }

    /// The canonical form and digest of `event`'s payload, if worked out ahead.
    func preparedPayload(of event: RecordedEvent) -> (canonical: [UInt8], digest: [UInt8])? {
        guard event.payload != nil else { return nil }
        if let staged = pending[event.seq] {
            guard let canonical = staged.canonical, let digest = staged.digest else { return nil }
            return (canonical, digest)
        }
        return ahead?.document(event.seq) ?? prep?.document(event.seq)
    }

    /// The stored form (``BlobCodec``) of the event's body: staged or prepared with it, else
    /// read from the log; nil when the event has none, or its row is a delta (which does not
    /// read on its own, so it is not copied anywhere).
    func storedForm(of event: RecordedEvent, in txn: Transaction) throws -> [UInt8]? {
        if let stored = pending[event.seq]?.stored ?? ahead?.stored(event.seq) ?? prep?.stored(event.seq) { return stored }
        guard let row = try storedRow(of: event, in: txn), BlobCodec.isSelfContained(row) else { return nil }
        return [UInt8](row)
    }

    /// Whether `json` is the event's whole payload: by identity or content, without copying a
    /// prepared body out.
    func isPayload(_ json: [UInt8], of event: RecordedEvent, in txn: Transaction) throws -> Bool {
        guard let ref = event.payload, ref.size == json.count else { return false }
        if let staged = pending[event.seq] { return staged.body == json }
        if let matches = ahead?.matches(event.seq, json) ?? prep?.matches(event.seq, json) { return matches }
        return try body(of: event, in: txn) == json
    }

    /// Whether an erasure rewrote the body `hash` names: one lookup, none while the store has
    /// rewritten nothing.
    func isRewritten(_ hash: [UInt8], in txn: Transaction) throws -> Bool {
        try txn.stat(rewritten).entries > 0 && txn.get(rewritten, key: hash) != nil
    }

    func body(of event: RecordedEvent, in txn: Transaction) throws -> [UInt8]? {
        guard let ref = event.payload else { return nil }
        if let b = pending[event.seq]?.body ?? ahead?.body(event.seq) ?? prep?.body(event.seq) {
            // A body equal to one an erasure rewrote is stored as that row, which holds what the
            // erasure left: the fold reads what the log holds, as a rebuild (or another node)
            // will, not the bytes that just arrived.
            guard try isRewritten(ref.hash, in: txn) else { return b }
        }
        return try storedRow(of: event, in: txn).map { try BlobCodec.decode($0, context: zstd, bases: DeltaBases(bodies: bodies, txn: txn)) }
    }

    /// The seq of the log's `bodies` row holding the event's body (``PayloadSlice/row``): its own
    /// when it stored the body, else the row of the event that did; nil when the event has no
    /// body or it is kept elsewhere (a store older than format 3).
    func bodyRow(of event: RecordedEvent, in txn: Transaction) throws -> UInt64? {
        guard let ref = event.payload else { return nil }
        if try BlobCodec.stored(seq: event.seq, bodies: bodies, in: txn) != nil { return event.seq }
        return try ref.hash.withUnsafeBytes { try bodyIndex.indexedSeq($0, in: txn) }
    }

    /// The log's row holding the event's body: its own row when it stored the body; else the row
    /// of the event that did. Valid until the transaction writes again.
    private func storedRow(of event: RecordedEvent, in txn: Transaction) throws -> UnsafeRawBufferPointer? {
        guard let ref = event.payload else { return nil }
        let own = try BlobCodec.stored(seq: event.seq, bodies: bodies, in: txn)
        guard let stored = try own ?? ref.hash.withUnsafeBytes({ try bodyIndex.stored(hash: $0, in: txn) }) else {
            throw EventStoreError.corrupted("the body \(ref.hashHex.prefix(16)) of event \(event.seq) is missing from the blob store")
        }
        return stored
    }
}
