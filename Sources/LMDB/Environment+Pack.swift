import CLMDB
import Glibc

extension Environment {
    /// Writes a packed copy of the environment into `directory` (which must exist and be empty):
    /// every table's entries, in key order, appended (`MDB_APPEND`) into a new environment, so
    /// its leaf pages are full, where inserts in the middle of a tree leave pages about half full
    /// after each split, and the pages transactions freed are left out. The rows are copied byte
    /// for byte. The copy's file gets the environment's mode and is flushed to disk before this
    /// returns.
    ///
    /// LMDB first writes a compacted copy of one read snapshot (`mdb_env_copy2` with
    /// `MDB_CP_COMPACT`) into `directory/.packing`; that private environment is then read table by
    /// table, so no database handle of this environment is opened or used while it runs.
    ///
    /// `rewrite`: a table's values as the copy stores them (by table name; a nil result copies the
    /// value as it is). `produce`: a table whose rows the copy gets from a producer instead of
    /// the snapshot's (rows may be merged or split). `additions`: entries put into a table of the
    /// copy after its rows are copied (replacing a row of the same key).
    public func copyPacked(
        to directory: String, rewrite: [String: PackRewrite] = [:], produce: [String: PackProducer] = [:],
        additions: [String: [(key: [UInt8], value: [UInt8])]] = [:]
    ) throws {
        let snapshot = directory + "/.packing"
        guard mkdir(snapshot, 0o700) == 0 else { throw StorageError(code: .other, message: "could not create \(snapshot): errno \(errno)") }
        defer { Self.remove(snapshot) }
        do {
            gate.lockShared()
            defer { gate.unlock() }
            try check(mdb_env_copy2(env, snapshot, UInt32(MDB_CP_COMPACT)), "mdb_env_copy2(\(snapshot))")
        }
        try Self.pack(
            from: snapshot, to: directory, mapSize: max(mapSize, usedBytes * 2), maxDatabases: options.maxDatabases, fileMode: options.fileMode,
            rewrite: rewrite, produce: produce, additions: additions)
        for file in [directory + "/data.mdb", directory] {
            let fd = open(file, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw StorageError(code: .other, message: "could not open \(file) to flush it: errno \(errno)") }
            defer { close(fd) }
            guard fsync(fd) == 0 else { throw StorageError(code: .other, message: "could not flush \(file): errno \(errno)") }
        }
    }

    /// Appends every table of the environment at `source` into a new one at `directory`.
    /// A table's value as a packed copy stores it (``copyPacked(to:rewrite:additions:)``), from
    /// its key and stored value, with the snapshot being copied to read other rows from; nil
    /// keeps the value. Tables are copied in the order of their names.
    public typealias PackRewrite = (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, _ snapshot: PackSnapshot) throws -> [UInt8]?

    /// A table's rows as a packed copy stores them, made from the snapshot: `emit` takes each row
    /// in key order (the copy appends them).
    public typealias PackProducer = (_ snapshot: PackSnapshot, _ emit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void) throws
        -> Void

    /// The snapshot a packed copy is made of, for a ``PackRewrite`` to read rows of any table as
    /// they are stored (valid until the rewrite returns).
    public final class PackSnapshot {
        fileprivate let txn: OpaquePointer?
        private var tables: [String: MDB_dbi] = [:]
        fileprivate init(txn: OpaquePointer?) { self.txn = txn }

        public func get(_ table: String, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
            guard let dbi = try dbi(table) else { return nil }
            var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            var v = MDB_val()
            let rc = mdb_get(txn, dbi, &k, &v)
            if rc == MDB_NOTFOUND { return nil }
            try check(rc, "mdb_get(\(table))")
            return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
        }

        /// Calls `body` with every row of `table` as stored, in key order (none when there is no
        /// such table).
        public func each(_ table: String, _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void) throws {
            guard let dbi = try dbi(table) else { return }
            try Environment.each(txn, dbi) { k, v in
                try body(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
            }
        }

        /// The handle of `table` in the snapshot; nil when it has no such table.
        private func dbi(_ table: String) throws -> MDB_dbi? {
            if let known = tables[table] { return known }
            var dbi: MDB_dbi = 0
            let rc = mdb_dbi_open(txn, table, 0, &dbi)
            if rc == MDB_NOTFOUND { return nil }
            try check(rc, "mdb_dbi_open(\(table))")
            tables[table] = dbi
            return dbi
        }

        /// The chunks of the row under `key` of the chunked table `table`, as stored, in order
        /// (none for a row kept whole): ``Transaction/storedChunks(_:storedKey:)`` of the snapshot.
        public func storedChunks(_ table: String, key: UnsafeRawBufferPointer) throws -> [UnsafeRawBufferPointer] {
            let companion = ChunkTable.companion(of: table)
            guard let dbi = try dbi(companion) else { return [] }
            var out: [UnsafeRawBufferPointer] = []
            try walkChunkRows(txn, dbi, companion, under: key) { out.append($0) }
            return out
        }
    }

    private static func pack(
        from source: String, to directory: String, mapSize: Int, maxDatabases: UInt32, fileMode: mode_t,
        rewrite: [String: PackRewrite], produce: [String: PackProducer], additions: [String: [(key: [UInt8], value: [UInt8])]]
    ) throws {
        func environment(_ path: String, readOnly: Bool) throws -> OpaquePointer {
            var env: OpaquePointer?
            try check(mdb_env_create(&env), "mdb_env_create")
            guard let env else { throw StorageError(code: .other, message: "could not create environment") }
            do {
                try check(mdb_env_set_maxdbs(env, maxDatabases), "mdb_env_set_maxdbs")
                try check(mdb_env_set_mapsize(env, mapSize), "mdb_env_set_mapsize")
                let flags = UInt32(MDB_NOTLS) | (readOnly ? UInt32(MDB_RDONLY) : UInt32(MDB_NOSYNC))
                try check(mdb_env_open(env, path, flags, fileMode), "mdb_env_open(\(path))")
            } catch {
                mdb_env_close(env)
                throw error
            }
            return env
        }
        let from = try environment(source, readOnly: true)
        defer { mdb_env_close(from) }
        let to = try environment(directory, readOnly: false)
        defer { mdb_env_close(to) }

        var read: OpaquePointer?
        try check(mdb_txn_begin(from, nil, UInt32(MDB_RDONLY), &read), "mdb_txn_begin")
        defer { mdb_txn_abort(read) }
        var write: OpaquePointer?
        try check(mdb_txn_begin(to, nil, 0, &write), "mdb_txn_begin")
        defer { if write != nil { mdb_txn_abort(write) } }

        // The main table's keys: the names of the tables (and any plain entries it holds).
        var main: MDB_dbi = 0, mainOut: MDB_dbi = 0
        try check(mdb_dbi_open(read, nil, 0, &main), "mdb_dbi_open")
        try check(mdb_dbi_open(write, nil, 0, &mainOut), "mdb_dbi_open")
        var names: [[UInt8]] = []
        try each(read, main) { key, _ in names.append(Array(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size))) }
        let snapshot = PackSnapshot(txn: read)

        for name in names {
            var cname = name + [0]
            var table: MDB_dbi = 0
            let rc = cname.withUnsafeMutableBytes { mdb_dbi_open(read, $0.baseAddress!.assumingMemoryBound(to: CChar.self), 0, &table) }
            if rc == MDB_INCOMPATIBLE || name.contains(0) {
                // A plain entry of the main table, not a table.
                var key = MDB_val(), value = MDB_val()
                try name.withUnsafeBytes { k in
                    key = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
                    try check(mdb_get(read, main, &key, &value), "mdb_get")
                    try check(mdb_put(write, mainOut, &key, &value, 0), "mdb_put")
                }
                continue
            }
            try check(rc, "mdb_dbi_open")
            var flags: UInt32 = 0
            try check(mdb_dbi_flags(read, table, &flags), "mdb_dbi_flags")
            let kept = flags & UInt32(MDB_REVERSEKEY | MDB_DUPSORT | MDB_INTEGERKEY | MDB_DUPFIXED | MDB_INTEGERDUP | MDB_REVERSEDUP)
            var out: MDB_dbi = 0
            try cname.withUnsafeMutableBytes {
                try check(mdb_dbi_open(write, $0.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(MDB_CREATE) | kept, &out), "mdb_dbi_open")
            }
            let append = UInt32(flags & UInt32(MDB_DUPSORT) != 0 ? MDB_APPENDDUP : MDB_APPEND)
            let tableName = String(decoding: name, as: UTF8.self)
            let rewritten = rewrite[tableName]
            var count = 0
            func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws {
                var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
                try check(mdb_put(write, out, &k, &v, append), "mdb_put")
                count += 1
                // Bounded transactions: appending goes on where the last one stopped.
                if count % 200_000 == 0 {
                    let rc = mdb_txn_commit(write)
                    write = nil
                    try check(rc, "mdb_txn_commit")
                    try check(mdb_txn_begin(to, nil, 0, &write), "mdb_txn_begin")
                }
            }
            if let producer = produce[tableName] {
                try producer(snapshot, put)
            } else {
                try each(read, table) { k, v in
                    let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
                    let value = UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
                    if let rewritten, let new = try rewritten(key, value, snapshot) {
                        try new.withUnsafeBytes { try put(key, $0) }
                    } else {
                        try put(key, value)
                    }
                }
            }
            for (key, value) in additions[tableName] ?? [] {
                try key.withUnsafeBytes { kb in
                    try value.withUnsafeBytes { vb in
                        var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
                        var v = MDB_val(mv_size: vb.count, mv_data: UnsafeMutableRawPointer(mutating: vb.baseAddress))
                        try check(mdb_put(write, out, &k, &v, 0), "mdb_put")
                    }
                }
            }
        }
        let rc = mdb_txn_commit(write)
        write = nil
        try check(rc, "mdb_txn_commit")
        try check(mdb_env_sync(to, 1), "mdb_env_sync")
    }

    /// Calls `body` with every entry of `table`, in key order.
    fileprivate static func each(_ txn: OpaquePointer?, _ table: MDB_dbi, _ body: (MDB_val, MDB_val) throws -> Void) throws {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, table, &cursor), "mdb_cursor_open")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val(), value = MDB_val()
        var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while rc == 0 {
            try body(key, value)
            rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
        guard rc == MDB_NOTFOUND else { try check(rc, "mdb_cursor_get"); return }
    }

    private static func remove(_ directory: String) {
        for file in ["data.mdb", "lock.mdb"] { unlink(directory + "/" + file) }
        rmdir(directory)
    }
}
