import CLMDB

/// An LMDB transaction. Not `Sendable`: use it inside the closure that created it.
///
/// Values returned by ``get(_:key:)`` and cursors point into the memory map and stay valid only
/// until the transaction ends or the next write to the same database.
public final class Transaction {
    let environment: Environment
    let txn: OpaquePointer
    public let readOnly: Bool
    private let holdsGate: Bool
    private var open = true
    private weak var parent: Transaction?
    /// Plaintext of sealed values handed out; a child transaction uses its root's.
    private var ownArena: Arena?
    var arena: Arena {
        if let parent { return parent.arena }
        if let ownArena { return ownArena }
        let a = Arena()
        ownArena = a
        return a
    }

    /// Whole values of chunked tables assembled so far (``ChunkTable``), by table and stored key:
    /// a value read again is the same memory, not another copy (a chain of deltas reads the
    /// same bases over and over). Only a root transaction keeps one; a write to a key, at any
    /// level, drops the key's entry.
    var assembledValues: [AssembledKey: UnsafeRawBufferPointer] = [:]
    /// What readers derived from stored rows (``derived(_:_:)``), the newest last; only a root
    /// transaction keeps it.
    private var derivedValues: [(key: AnyHashable, value: AnyObject)] = []
    var root: Transaction { parent?.root ?? self }
    var isRoot: Bool { parent == nil }

    /// `count` bytes of memory the transaction owns, valid until it ends (as a value read from
    /// the map is): for values a reader rebuilds from their stored form.
    public func scratch(_ count: Int) -> UnsafeMutableRawBufferPointer { arena.allocate(count) }

    /// What a reader derives from a stored row, made under `key` once while it is among the
    /// ``derivedLimit`` used last in the root transaction: for rows that are never rewritten in
    /// place, such as a block of the log's envelopes, which a walk would otherwise decode again
    /// for each entry, and which a walk of a whole log must not keep all of.
    public func derived<T: AnyObject>(_ key: AnyHashable, _ make: () throws -> T) throws -> T {
        let r = root
        if let i = r.derivedValues.lastIndex(where: { $0.key == key }), let known = r.derivedValues[i].value as? T {
            // The latest used last, so a value used all along (the bodies a walk of versions
            // keeps) outlives the ones made and left since.
            if i != r.derivedValues.count - 1 { r.derivedValues.append(r.derivedValues.remove(at: i)) }
            return known
        }
        let value = try make()
        if r.derivedValues.count == Self.derivedLimit { r.derivedValues.removeFirst() }
        r.derivedValues.append((key, value))
        return value
    }

    /// How many derived values a transaction keeps.
    public static let derivedLimit = 8

    init(environment: Environment, txn: OpaquePointer, readOnly: Bool, holdsGate: Bool, parent: Transaction?) {
        self.environment = environment
        self.txn = txn
        self.readOnly = readOnly
        self.holdsGate = holdsGate
        self.parent = parent
    }

    deinit { if open { abort() } }

    /// Commits. After this call the transaction is closed, whether or not it threw.
    public func commit() throws {
        precondition(open, "transaction already ended")
        open = false
        let rc = mdb_txn_commit(txn)
        assembledValues = [:]
        derivedValues = []
        ownArena?.release()
        if holdsGate { environment.gate.unlock() }
        try check(rc, "mdb_txn_commit")
    }

    /// Aborts; harmless on an ended transaction.
    public func abort() {
        guard open else { return }
        open = false
        mdb_txn_abort(txn)
        assembledValues = [:]
        derivedValues = []
        ownArena?.release()
        if holdsGate { environment.gate.unlock() }
    }

    /// Runs `body` in a nested (child) write transaction. If `body` throws, only the child's
    /// writes are undone and the error is rethrown; the parent stays usable.
    public func nested<T>(_ body: (Transaction) throws -> T) throws -> T {
        let child = try environment.begin(readOnly: false, parent: self)
        do {
            let value = try body(child)
            try child.commit()
            return value
        } catch {
            child.abort()
            throw error
        }
    }

    // MARK: Reads and writes

    /// The value stored under `key`, or nil. The buffer is valid until the transaction ends.
    public func get(_ db: Database, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        guard let p = db.protection else {
            guard let v = try getRaw(db, key: key) else { return nil }
            return db.chunks == nil ? v : try assembled(db, storedKey: key, v)
        }
        return try withStoredKey(db, p, key) { k in
            guard let v = try getRaw(db, key: k) else { return nil }
            return try assembled(db, storedKey: k, try plain(db, p, k, v))
        }
    }

    /// The value stored under `key` as LMDB holds it: no digest of the key, no opening of a
    /// sealed value (``verify`` of what is stored, without the store's key).
    public func getRaw(_ db: Database, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = mdb_get(txn, db.dbi, &k, &v)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_get(\(db.name))")
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    public func get(_ db: Database, key: [UInt8]) throws -> [UInt8]? {
        try key.withUnsafeBytes { (k) -> [UInt8]? in
            guard let v = try get(db, key: k) else { return nil }
            return [UInt8](v)
        }
    }

    public func contains(_ db: Database, key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { (k) -> Bool in try get(db, key: k) != nil }
    }

    /// Flags for ``put(_:key:value:flags:)``.
    public struct PutFlags: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Fail with `.keyExists` instead of overwriting.
        public static let noOverwrite = PutFlags(rawValue: UInt32(MDB_NOOVERWRITE))
        /// The key sorts after every existing key (fast path for logs); else `.keyExists`.
        public static let append = PutFlags(rawValue: UInt32(MDB_APPEND))
        /// Through a cursor only (``Cursor/put(key:value:flags:)``): replace the entry under the
        /// cursor, whose key must be the one given, without a search.
        public static let current = PutFlags(rawValue: UInt32(MDB_CURRENT))
    }

    /// Stores `value` under `key`. Returns false (and writes nothing) when `.noOverwrite` is set and
    /// the key exists.
    @discardableResult
    public func put(_ db: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []) throws -> Bool {
        if let chunks = db.chunks { return try putChunked(db, chunks, key: key, value: value, flags: flags) }
        return try putValue(db, key: key, value: value, flags: flags)
    }

    /// ``put(_:key:value:flags:)`` of a value kept in the table's own row.
    func putValue(_ db: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags) throws -> Bool {
        if let p = db.protection {
            return try withStoredKey(db, p, key) { k in
                // An empty value stays empty: it has nothing to hide (index entries), and a sealed
                // value is never empty, so a read tells the two apart.
                guard p.sealsValues, value.count > 0 else { return try putRaw(db, key: k, value: value, flags: flags) }
                let (rc, _) = try reserve(db, k, p.sealer.overhead + value.count, flags.rawValue) { out in
                    p.sealer.seal(value, domain: db.domain, key: k, into: out)
                }
                return rc == 0
            }
        }
        return try putRaw(db, key: key, value: value, flags: flags)
    }

    /// Stores `value` under `key` as given (see ``getRaw(_:key:)``).
    @discardableResult
    public func putRaw(_ db: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let rc = mdb_put(txn, db.dbi, &k, &v, flags.rawValue)
        if rc == MDB_KEYEXIST && flags.contains(.noOverwrite) { return false }
        try check(rc, "mdb_put(\(db.name))")
        return true
    }

    @discardableResult
    public func put(_ db: Database, key: [UInt8], value: [UInt8], flags: PutFlags = []) throws -> Bool {
        try key.withUnsafeBytes { (k) -> Bool in
            try value.withUnsafeBytes { (v) -> Bool in
                try put(db, key: k, value: v, flags: flags)
            }
        }
    }

    /// Stores `value` under `key` unless the key exists, and then returns the stored value instead
    /// (nil when `value` was stored): one B-tree descent where a get and a put take two.
    public func insert(_ db: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        if db.chunks != nil {
            // A chunked table's rows may be heads of chunks: a get, then a put.
            if let existing = try get(db, key: key) { return existing }
            try put(db, key: key, value: value)
            return nil
        }
        if let p = db.protection {
            return try withStoredKey(db, p, key) { k in
                guard p.sealsValues else { return try insertRaw(db, k, value) }
                if value.count == 0 { return try insertRaw(db, k, value).map { try plain(db, p, k, $0) } }
                let (rc, existing) = try reserve(db, k, p.sealer.overhead + value.count, UInt32(MDB_NOOVERWRITE)) { out in
                    p.sealer.seal(value, domain: db.domain, key: k, into: out)
                }
                return rc == 0 ? nil : try plain(db, p, k, existing)
            }
        }
        return try insertRaw(db, key, value)
    }

    /// ``insert(_:key:value:)`` of arrays; the stored value, when there was one, copied.
    @discardableResult
    public func insert(_ db: Database, key: [UInt8], value: [UInt8]) throws -> [UInt8]? {
        try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try insert(db, key: k, value: v).map { [UInt8]($0) } } }
    }

    private func insertRaw(_ db: Database, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let rc = mdb_put(txn, db.dbi, &k, &v, UInt32(MDB_NOOVERWRITE))
        if rc == MDB_KEYEXIST { return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size) }
        try check(rc, "mdb_put(\(db.name))")
        return nil
    }

    /// Reserves `count` bytes under `key` and lets `fill` write them in place (no extra copy).
    public func putReserved(_ db: Database, key: UnsafeRawBufferPointer, count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) throws {
        try putReserved(db, db.protection, key, count, flags: 0, cursor: nil, fill)
    }

    /// ``putReserved(_:key:count:fill:)`` under `p` (a cursor's, which may be none), with
    /// `flags`, through `cursor` when given: in a database that seals its values, `fill` writes
    /// the plaintext into the transaction's memory and the sealed form is written in place.
    func putReserved(
        _ db: Database, _ p: Protection?, _ key: UnsafeRawBufferPointer, _ count: Int, flags: UInt32, cursor: OpaquePointer?,
        _ fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws {
        var fill = fill
        var markedValue = false
        if let chunks = db.chunks {
            let overhead = db.protection?.valueOverhead ?? 0
            let fits = try withStoredKey(db, db.protection, key) { k in
                let fits = chunks.fitsInline(count, keyCount: k.count, mainOverhead: overhead)
                if fits {
                    if flags & UInt32(MDB_APPEND) == 0 { try removeChunks(db, storedKey: k) } else { forgetAssembled(db, storedKey: k) }
                }
                return fits
            }
            guard fits else {
                // Too large for its own row: written out whole, then chunked.
                let plain = arena.allocate(count)
                fill(plain)
                _ = try put(db, key: key, value: UnsafeRawBufferPointer(plain), flags: PutFlags(rawValue: flags & ~UInt32(MDB_CURRENT)))
                return
            }
            // In its own row, in place (through the cursor, where LMDB looks in the cursor's
            // page first); a value that starts with the chunks' mark would read as a head.
            let given = fill
            fill = { out in
                given(out)
                markedValue = out.first == chunks.mark
            }
        }
        try withStoredKey(db, p, key) { k in
            guard let p, p.sealsValues else {
                _ = try reserve(db, k, count, flags, cursor: cursor, fill)
                return
            }
            let plain = arena.allocate(count)
            fill(plain)
            _ = try reserve(db, k, p.sealer.overhead + count, flags, cursor: cursor) { out in
                p.sealer.seal(UnsafeRawBufferPointer(plain), domain: db.domain, key: k, into: out)
            }
        }
        if markedValue {
            throw StorageError(code: .invalidArgument, message: "a value of the chunked table \(db.name) starts with its chunks' mark")
        }
    }

    /// Deletes `key`; returns whether it existed.
    @discardableResult
    public func delete(_ db: Database, key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { (raw) -> Bool in
            try withStoredKey(db, db.protection, raw) { kb in
                try removeChunks(db, storedKey: kb)
                var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
                let rc = mdb_del(txn, db.dbi, &k, nil)
                if rc == MDB_NOTFOUND { return false }
                try check(rc, "mdb_del(\(db.name))")
                return true
            }
        }
    }

    /// Removes every entry of `db`, keeping the database.
    public func clear(_ db: Database) throws {
        try check(mdb_drop(txn, db.dbi, 0), "mdb_drop(\(db.name))")
        if let chunks = db.chunks {
            try check(mdb_drop(txn, chunks.dbi, 0), "mdb_drop(\(chunks.name))")
            root.assembledValues = root.assembledValues.filter { $0.key.dbi != db.dbi }
        }
    }

    public func stat(_ db: Database) throws -> DatabaseStat {
        var s = MDB_stat()
        try check(mdb_stat(txn, db.dbi, &s), "mdb_stat(\(db.name))")
        return DatabaseStat(
            entries: s.ms_entries, depth: Int(s.ms_depth),
            pages: s.ms_branch_pages + s.ms_leaf_pages + s.ms_overflow_pages,
            pageSize: Int(s.ms_psize))
    }

    /// Pages in LMDB's free list as this transaction sees it: freed by earlier transactions,
    /// reused by later ones, never given back to the file system (``Environment/copyPacked(to:)``
    /// writes a copy without them).
    public func freePages() throws -> Int {
        var c: OpaquePointer?
        try check(mdb_cursor_open(txn, 0, &c), "mdb_cursor_open(free list)")
        defer { mdb_cursor_close(c) }
        var key = MDB_val(), value = MDB_val()
        var pages = 0
        var rc = mdb_cursor_get(c, &key, &value, MDB_FIRST)
        while rc == 0 {
            // A free-list record: a count of page numbers, then the numbers (`size_t` each).
            if value.mv_size >= MemoryLayout<Int>.size { pages += value.mv_data.loadUnaligned(as: Int.self) }
            rc = mdb_cursor_get(c, &key, &value, MDB_NEXT)
        }
        guard rc == MDB_NOTFOUND else { try check(rc, "mdb_cursor_get(free list)"); return pages }
        return pages
    }

    /// Opens a cursor over `db`, closed when the transaction ends or the cursor is released.
    /// `raw`: entries as LMDB holds them (sealed values not opened; see ``getRaw(_:key:)``).
    /// Over a database with digested keys, the keys are the digests, and a seek digests its key.
    public func cursor(_ db: Database, raw: Bool = false) throws -> Cursor {
        var c: OpaquePointer?
        try check(mdb_cursor_open(txn, db.dbi, &c), "mdb_cursor_open(\(db.name))")
        return Cursor(cursor: c!, transaction: self, database: db, protection: raw ? nil : db.protection, raw: raw)
    }

    // MARK: Protection

    /// Runs `body` with the key LMDB stores for `key`: a digest of it, on a database that
    /// digests its keys.
    func withStoredKey<T>(
        _ db: Database, _ p: Protection?, _ key: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) throws -> T
    ) rethrows -> T {
        guard let p, let n = p.keyDigestLength else { return try body(key) }
        return try withUnsafeTemporaryAllocation(byteCount: p.keyOrderLength + n, alignment: 1) { out in
            p.storedKey(key, domain: db.domain, into: out)
            return try body(UnsafeRawBufferPointer(out))
        }
    }

    /// The plaintext of `stored`, read raw from `db` under `key` (as stored): what a read would
    /// have given. Throws when a sealed value does not open.
    public func plainValue(_ db: Database, key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        guard let p = db.protection else { return try assembled(db, storedKey: key, stored) }
        return try assembled(db, storedKey: key, try plain(db, p, key, stored))
    }

    /// The plaintext of a value read from a protected database, in the transaction's memory.
    func plain(_ db: Database, _ p: Protection, _ key: UnsafeRawBufferPointer, _ stored: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        guard p.sealsValues, stored.count > 0 else { return stored }
        guard stored.count >= p.sealer.overhead else {
            throw StorageError(code: .corrupted, message: "a sealed value in \(db.name) is \(stored.count) bytes, shorter than its seal")
        }
        let out = arena.allocate(stored.count - p.sealer.overhead)
        try p.sealer.open(stored, domain: db.domain, key: key, into: out)
        return UnsafeRawBufferPointer(out)
    }

    /// `mdb_put` (`mdb_cursor_put` through `cursor`) with `MDB_RESERVE`; `fill` writes the
    /// reserved bytes. Returns the return code (0, or `MDB_KEYEXIST` under `MDB_NOOVERWRITE`,
    /// with the stored value).
    private func reserve(
        _ db: Database, _ key: UnsafeRawBufferPointer, _ count: Int, _ flags: UInt32, cursor: OpaquePointer? = nil,
        _ fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws -> (Int32, UnsafeRawBufferPointer) {
        try reserve(db.dbi, db.name, key, count, flags, cursor: cursor, fill)
    }

    /// ``reserve(_:_:_:_:cursor:_:)`` in the database `dbi` named `name`.
    func reserve(
        _ dbi: MDB_dbi, _ name: String, _ key: UnsafeRawBufferPointer, _ count: Int, _ flags: UInt32, cursor: OpaquePointer? = nil,
        _ fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws -> (Int32, UnsafeRawBufferPointer) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: count, mv_data: nil)
        let rc = cursor.map { mdb_cursor_put($0, &k, &v, flags | UInt32(MDB_RESERVE)) } ?? mdb_put(txn, dbi, &k, &v, flags | UInt32(MDB_RESERVE))
        if rc == MDB_KEYEXIST && flags & UInt32(MDB_NOOVERWRITE) != 0 {
            return (rc, UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
        }
        try check(rc, cursor == nil ? "mdb_put(\(name))" : "mdb_cursor_put(\(name))")
        fill(UnsafeMutableRawBufferPointer(start: v.mv_data, count: count))
        return (0, UnsafeRawBufferPointer(start: nil, count: 0))
    }
}

/// A cursor over one database. Entries are (key, value) buffers valid until the transaction ends.
public final class Cursor {
    let cursor: OpaquePointer
    // Keeps the transaction alive as long as the cursor.
    private let transaction: Transaction
    private let database: Database
    private let protection: Protection?
    /// Entries as stored: no opening, no chunks joined.
    private let raw: Bool

    init(cursor: OpaquePointer, transaction: Transaction, database: Database, protection: Protection?, raw: Bool) {
        self.cursor = cursor
        self.transaction = transaction
        self.database = database
        self.protection = protection
        self.raw = raw
    }

    deinit { mdb_cursor_close(cursor) }

    public typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    private func op(_ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil) throws -> Entry? {
        var k = MDB_val(mv_size: key?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: key?.baseAddress))
        var v = MDB_val()
        let rc = mdb_cursor_get(cursor, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_cursor_get")
        let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
        let value = UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
        if raw { return (key, value) }
        let plain = try protection.map { try transaction.plain(database, $0, key, value) } ?? value
        return (key, database.chunks == nil ? plain : try transaction.assembled(database, storedKey: key, plain))
    }

    public func first() throws -> Entry? { try op(MDB_FIRST) }
    public func last() throws -> Entry? { try op(MDB_LAST) }
    public func next() throws -> Entry? { try op(MDB_NEXT) }
    public func previous() throws -> Entry? { try op(MDB_PREV) }
    public func current() throws -> Entry? { try op(MDB_GET_CURRENT) }

    /// Positions at the first key ≥ `key`.
    public func seek(atLeast key: UnsafeRawBufferPointer) throws -> Entry? {
        try transaction.withStoredKey(database, protection, key) { try op(MDB_SET_RANGE, key: $0) }
    }

    public func seek(atLeast key: [UInt8]) throws -> Entry? {
        if key.isEmpty { return try first() }
        return try key.withUnsafeBytes { (k) -> Entry? in try seek(atLeast: k) }
    }

    /// Positions at `key` and returns its value; nil when there is none (the cursor then stands
    /// where `key` would go, so a put of it through the cursor starts from there).
    public func seek(exactly key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        try transaction.withStoredKey(database, protection, key) { k in
            guard let e = try op(MDB_SET_RANGE, key: k), e.key.elementsEqual(k) else { return nil }
            return e.value
        }
    }

    /// Positions at the last key ≤ `key`: one B-tree seek plus at most one step back.
    public func seek(atMost key: [UInt8]) throws -> Entry? {
        // No key is shorter than the empty one (LMDB refuses to seek to it).
        if key.isEmpty { return try first().flatMap { $0.key.isEmpty ? $0 : nil } }
        return try key.withUnsafeBytes { try seek(atMost: $0) }
    }

    /// ``seek(atMost:)`` of bytes.
    public func seek(atMost key: UnsafeRawBufferPointer) throws -> Entry? {
        if let e = try seek(atLeast: key) {
            if e.key.elementsEqual(key) { return e }
            return try previous()
        }
        return try last()
    }

    /// Stores `count` bytes under `key` through the cursor, `fill` writing them in place (sealed
    /// after, in a database that seals its values), and leaves the cursor on the new entry. Where
    /// ``Transaction/putReserved(_:key:count:fill:)`` searches the tree from its root, LMDB first
    /// looks in the page the cursor is on: a key written next to the one the cursor stands on
    /// costs no descent, and `.current` replaces the entry under the cursor without any search.
    /// `.append` keeps its check that the key sorts last.
    public func put(
        key: UnsafeRawBufferPointer, count: Int, flags: Transaction.PutFlags = [],
        fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws {
        try transaction.putReserved(database, protection, key, count, flags: flags.rawValue, cursor: cursor, fill)
    }

    /// ``put(key:count:flags:fill:)`` of the bytes `value`.
    public func put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: Transaction.PutFlags = []) throws {
        try put(key: key, count: value.count, flags: flags) { $0.copyMemory(from: value) }
    }

    /// Deletes the entry under the cursor.
    public func deleteCurrent() throws {
        if database.chunks != nil {
            var k = MDB_val(), v = MDB_val()
            try check(mdb_cursor_get(cursor, &k, &v, MDB_GET_CURRENT), "mdb_cursor_get")
            try transaction.removeChunks(database, storedKey: UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size))
        }
        try check(mdb_cursor_del(cursor, 0), "mdb_cursor_del")
    }
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes start with `prefix`.
    public func hasPrefix(_ prefix: [UInt8]) -> Bool {
        guard count >= prefix.count else { return false }
        for i in 0..<prefix.count where self[i] != prefix[i] { return false }
        return true
    }
}
