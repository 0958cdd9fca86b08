public import CLMDB
import Glibc

/// Options for opening an LMDB environment.
public struct EnvironmentOptions: Sendable {
    /// Initial map size in bytes; the map also bounds the database size and grows on demand.
    public var mapSize: Int = 1 << 30
    public var maxDatabases: UInt32 = 64
    public var maxReaders: UInt32 = 126
    /// Durability of commits. `.full` fsyncs every commit.
    public var durability: Durability = .full
    /// Permission bits of the data and lock files.
    public var fileMode: mode_t = 0o600
    /// Open read-only.
    public var readOnly: Bool = false

    public enum Durability: String, Sendable, CaseIterable {
        /// fsync data and meta page on every commit (ACID).
        case full
        /// skip the meta-page fsync: a system crash may undo the last transaction, never corrupt.
        case noMetaSync
        /// no fsync: fastest; a system crash may lose recent transactions (process crashes lose nothing).
        case noSync
    }

    public init() {}
}

/// An open LMDB environment (one directory holding `data.mdb` and `lock.mdb`).
///
/// Opened with `MDB_NOTLS`, so a read transaction belongs to its `Transaction` object rather than
/// to an OS thread and may be used from any Swift task. Write transactions must be begun, used and
/// ended on one thread without suspending; the event store guarantees that with a serial executor.
///
/// The map is grown in place when it fills (see ``growMap(minimum:)``); an in-process
/// reader/writer gate makes sure no transaction is live while the map is resized.
// Unchecked: a raw `MDB_env` pointer (LMDB environments are thread-safe with MDB_NOTLS) and a
// map size changed only under the reader/writer gate.
public final class Environment: @unchecked Sendable {
    let env: OpaquePointer
    public let path: String
    public let options: EnvironmentOptions
    /// Held shared by every transaction, exclusively by a map resize.
    let gate = RWLock()
    /// Reader slots of dead processes cleared when this environment was opened.
    public let staleReadersCleared: Int

    /// Opens (and creates) the environment at `path`, a directory that must exist.
    /// - Throws: ``StorageError`` if the directory is missing, unreadable or not an LMDB store.
    public init(path: String, options: EnvironmentOptions = EnvironmentOptions()) throws {
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create")
        guard let env else { throw StorageError(code: .other, message: "could not create environment") }
        do {
            try check(mdb_env_set_maxdbs(env, options.maxDatabases), "mdb_env_set_maxdbs")
            try check(mdb_env_set_maxreaders(env, options.maxReaders), "mdb_env_set_maxreaders")
            try check(mdb_env_set_mapsize(env, options.mapSize), "mdb_env_set_mapsize")
            var flags = UInt32(MDB_NOTLS)
            switch options.durability {
            case .full: break
            case .noMetaSync: flags |= UInt32(MDB_NOMETASYNC)
            case .noSync: flags |= UInt32(MDB_NOSYNC)
            }
            if options.readOnly { flags |= UInt32(MDB_RDONLY) }
            try check(mdb_env_open(env, path, flags, options.fileMode), "mdb_env_open(\(path))")
        } catch {
            mdb_env_close(env)
            throw error
        }
        self.env = env
        self.path = path
        self.options = options
        // Reclaim reader slots left by processes that died holding a read transaction: they
        // would pin old pages and keep the file from reusing them.
        var dead: Int32 = 0
        _ = mdb_reader_check(env, &dead)
        staleReadersCleared = Int(dead)
    }

    deinit { mdb_env_close(env) }

    /// Clears stale reader slots of dead processes; returns how many were cleared.
    @discardableResult
    public func readerCheck() -> Int {
        var dead: Int32 = 0
        _ = mdb_reader_check(env, &dead)
        return Int(dead)
    }

    /// The current map size in bytes.
    public var mapSize: Int {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_mapsize
    }

    /// Bytes in use: (last used page + 1) × page size.
    public var usedBytes: Int {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        var stat = MDB_stat()
        mdb_env_stat(env, &stat)
        return (info.me_last_pgno + 1) * Int(stat.ms_psize)
    }

    public var maxKeySize: Int { Int(mdb_env_get_maxkeysize(env)) }

    /// Flushes buffers to disk (useful with `.noSync`).
    public func sync(force: Bool = true) throws {
        try check(mdb_env_sync(env, force ? 1 : 0), "mdb_env_sync")
    }

    /// Doubles the map (at least to `minimum` bytes). Waits for every live transaction of this
    /// process to end first, as LMDB requires.
    public func growMap(minimum: Int = 0) throws {
        gate.lockExclusive()
        defer { gate.unlock() }
        let target = max(mapSize * 2, minimum)
        try check(mdb_env_set_mapsize(env, target), "mdb_env_set_mapsize(\(target))")
    }

    /// Adopts a map size set by another process (after `MDB_MAP_RESIZED`).
    func adoptMapSize() throws {
        gate.lockExclusive()
        defer { gate.unlock() }
        try check(mdb_env_set_mapsize(env, 0), "mdb_env_set_mapsize(0)")
    }

    /// Begins a transaction. Retries once, transparently, if another process grew the map.
    public func begin(readOnly: Bool, parent: Transaction? = nil) throws -> Transaction {
        if parent == nil { gate.lockShared() }
        var attempt = 0
        while true {
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(env, parent?.txn, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
            if rc == 0, let txn {
                return Transaction(environment: self, txn: txn, readOnly: readOnly, holdsGate: parent == nil, parent: parent)
            }
            if rc == MDB_MAP_RESIZED, parent == nil, attempt < 3 {
                attempt += 1
                gate.unlock()
                do { try adoptMapSize() } catch { gate.lockShared(); continue }
                gate.lockShared()
                continue
            }
            if parent == nil { gate.unlock() }
            throw StorageError.lmdb(rc, readOnly ? "mdb_txn_begin(read)" : "mdb_txn_begin(write)")
        }
    }

    /// Runs `body` in a read-only transaction that is ended when `body` returns.
    public func read<T>(_ body: (Transaction) throws -> T) throws -> T {
        let txn = try begin(readOnly: true)
        defer { txn.abort() }
        return try body(txn)
    }

    /// Runs `body` in a write transaction, committing if it returns and aborting if it throws.
    /// Blocks while another process holds the write lock. On `MDB_MAP_FULL` the map is grown and
    /// the whole body is run again, so `body` must be repeatable.
    public func write<T>(_ body: (Transaction) throws -> T) throws -> T {
        var retries = 0
        while true {
            let txn = try begin(readOnly: false)
            do {
                let value = try body(txn)
                try txn.commit()
                return value
            } catch let error as StorageError where error.code == .mapFull && retries < 40 {
                txn.abort()
                retries += 1
                try growMap()
            } catch {
                txn.abort()
                throw error
            }
        }
    }

    /// Opens (creating when writable) a named database. Call once per name, at start-up,
    /// inside a write transaction that is committed before the handle is used elsewhere.
    /// `protection`: how its rows are protected in an encrypted store (nil: stored as given).
    /// `chunked`: large values go to the companion table `NAME.chunks` (``ChunkTable``), their
    /// heads marked `chunkMark`; opened without `create`, a table whose companion does not exist
    /// has none (it holds no chunks).
    public func openDatabase(
        _ name: String?, in txn: Transaction, create: Bool = true, protection: Protection? = nil, chunked: Bool = false, chunkMark: UInt8 = 0xFF
    ) throws -> Database {
        var dbi: MDB_dbi = 0
        let flags: UInt32 = create && !txn.readOnly ? UInt32(MDB_CREATE) : 0
        try check(mdb_dbi_open(txn.txn, name, flags, &dbi), "mdb_dbi_open(\(name ?? "main"))")
        var chunks: ChunkTable?
        if chunked, let name {
            let companion = ChunkTable.companion(of: name)
            var cdbi: MDB_dbi = 0
            let rc = mdb_dbi_open(txn.txn, companion, flags, &cdbi)
            if !(rc == MDB_NOTFOUND && flags == 0) {
                try check(rc, "mdb_dbi_open(\(companion))")
                chunks = ChunkTable(
                    dbi: cdbi, name: companion, domain: Database.domain(companion),
                    protection: protection.map { Protection(sealer: $0.sealer, sealsValues: $0.sealsValues) },
                    nodeMax: nodeMax, mark: chunkMark)
            }
        }
        return Database(dbi: dbi, name: name ?? "", protection: protection, chunks: chunks)
    }
}

extension Environment {
    /// The largest node LMDB keeps in a leaf page (`me_nodemax`): its 8-byte header, key and
    /// value; a larger one goes to overflow pages of its own.
    public var nodeMax: Int {
        var stat = MDB_stat()
        mdb_env_stat(env, &stat)
        return (((Int(stat.ms_psize) - 16) / 2) & ~1) - 2
    }

    /// The most plaintext bytes a value of `db` under a key of `keyCount` bytes can have and
    /// stay in a leaf page (a sealed value's seal counted).
    public func largestInlineValue(_ db: Database, keyCount: Int) -> Int {
        inlineCapacity(nodeMax: nodeMax, keyCount: keyCount, overhead: db.protection?.valueOverhead ?? 0)
    }
}

/// A handle to a named database inside an environment.
public struct Database: Sendable, Hashable {
    public let dbi: MDB_dbi
    public let name: String
    /// Sealed values and digested keys, in an encrypted store.
    public let protection: Protection?
    /// What sealed values are bound to besides their key: FNV-1a of the name, so a value moved
    /// to another database does not open.
    public let domain: UInt64
    /// Where large values go, in a chunked table (``ChunkTable``).
    public let chunks: ChunkTable?

    init(dbi: MDB_dbi, name: String, protection: Protection? = nil, chunks: ChunkTable? = nil) {
        self.dbi = dbi
        self.name = name
        self.protection = protection
        self.chunks = chunks
        domain = Self.domain(name)
    }

    static func domain(_ name: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in name.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }

    /// The key LMDB holds for `key`: a keyed digest of it where the database digests its keys.
    public func storedKey(_ key: [UInt8]) -> [UInt8] {
        guard let p = protection, let n = p.keyDigestLength else { return key }
        var out = [UInt8](repeating: 0, count: p.keyOrderLength + n)
        key.withUnsafeBytes { k in out.withUnsafeMutableBytes { p.storedKey(k, domain: domain, into: $0) } }
        return out
    }

    public static func == (a: Database, b: Database) -> Bool { a.dbi == b.dbi && a.name == b.name }
    public func hash(into h: inout Hasher) { h.combine(dbi); h.combine(name) }
}

/// Statistics of one database.
public struct DatabaseStat: Sendable {
    public var entries: Int
    public var depth: Int
    public var pages: Int
    public var pageSize: Int
    public var bytes: Int { pages * pageSize }
}

/// A pthread reader/writer lock.
// Unchecked: a `pthread_rwlock_t`, which is made to be shared between threads.
final class RWLock: @unchecked Sendable {
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
    init() { pthread_rwlock_init(lock, nil) }
    deinit { pthread_rwlock_destroy(lock); lock.deallocate() }
    func lockShared() { pthread_rwlock_rdlock(lock) }
    func lockExclusive() { pthread_rwlock_wrlock(lock) }
    func unlock() { pthread_rwlock_unlock(lock) }
}
