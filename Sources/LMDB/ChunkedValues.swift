import CLMDB
import Glibc

/// A table whose large values are kept as page-filling chunks in a companion table, so they do
/// not take overflow pages.
///
/// LMDB stores a value that does not fit half a page on overflow pages of its own: a value of
/// 2.1 KB takes 4 KiB, one of 4.2 KB takes 8 KiB, half a page lost on average. In the `pages`
/// scraping history that was 0.80 MB of the bodies' 6.03 MB. A chunked table writes such a value
/// as chunks of exactly the largest size two of which fill a leaf page, under `stored key ‖
/// u32be index` in the companion (`NAME.chunks`), and keeps the rest, the tail, in its own row:
/// `0xFF | varint chunks | tail` (plaintext; sealed like any value in an encrypted store, each
/// chunk sealed on its own). Reads, writes, deletes and cursors of the table see whole values;
/// a raw read sees the stored row, and ``Transaction/storedChunks(_:storedKey:)`` its chunks as
/// stored. The head's first byte is the table's mark (0xFF unless given): a value the table
/// stores must not start with it.
public struct ChunkTable: Sendable, Hashable {
    let dbi: MDB_dbi
    let name: String
    let domain: UInt64
    let protection: Protection?
    /// The largest node LMDB keeps in a leaf page (`me_nodemax`).
    let nodeMax: Int
    /// The first byte of a head, which no value of the table starts with.
    let mark: UInt8

    public static func == (a: ChunkTable, b: ChunkTable) -> Bool { a.dbi == b.dbi && a.name == b.name }
    public func hash(into h: inout Hasher) { h.combine(dbi) }

    /// The companion table of the chunked table `name`.
    static func companion(of name: String) -> String { name + ".chunks" }

    /// The plaintext bytes of a chunk under a main key of `keyCount` bytes: the chunk's node
    /// (8-byte header, its key, its stored value) is exactly `nodeMax`.
    func chunkPlain(keyCount: Int) -> Int { inlineCapacity(nodeMax: nodeMax, keyCount: keyCount + 4, overhead: overhead) }

    var overhead: Int { protection?.valueOverhead ?? 0 }

    /// Whether a value of `count` plaintext bytes under a stored key of `keyCount` bytes stays in
    /// the table's own row (its node fits a leaf page).
    func fitsInline(_ count: Int, keyCount: Int, mainOverhead: Int) -> Bool {
        count <= inlineCapacity(nodeMax: nodeMax, keyCount: keyCount, overhead: mainOverhead)
    }
}

/// The most plaintext bytes a value under a key of `keyCount` bytes can have with its node (an
/// 8-byte header, the key, the value and `overhead` bytes of seal) at most `nodeMax`: in a leaf
/// page, not on overflow pages of its own.
func inlineCapacity(nodeMax: Int, keyCount: Int, overhead: Int) -> Int { nodeMax - 8 - keyCount - overhead }

/// A chunked value's place in ``Transaction/assembledValues``.
struct AssembledKey: Hashable {
    var dbi: MDB_dbi
    var key: [UInt8]
}

extension Transaction {
    /// The whole value of a row of a chunked table whose plaintext is `plain`, read under the
    /// stored key `key`: `plain` itself unless it is a chunked row's head.
    func assembled(_ db: Database, storedKey key: UnsafeRawBufferPointer, _ plain: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        guard let chunks = db.chunks, plain.first == chunks.mark else { return plain }
        let cacheKey = AssembledKey(dbi: db.dbi, key: [UInt8](key))
        if let known = root.assembledValues[cacheKey] { return known }
        let value = try assemble(db, storedKey: key, plain)
        if isRoot { assembledValues[cacheKey] = value }
        return value
    }

    /// Forgets the assembled value under the stored key `key` (it is being written).
    func forgetAssembled(_ db: Database, storedKey key: UnsafeRawBufferPointer) {
        let r = root
        guard !r.assembledValues.isEmpty else { return }
        r.assembledValues[AssembledKey(dbi: db.dbi, key: [UInt8](key))] = nil
    }

    private func assemble(_ db: Database, storedKey key: UnsafeRawBufferPointer, _ plain: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        guard let chunks = db.chunks else { return plain }
        func damaged() -> StorageError {
            StorageError(code: .corrupted, message: "a chunked value in \(db.name) is damaged (its chunks do not match its head)")
        }
        // The head: the mark, a varint count of chunks, the tail.
        var count = 0
        var shift = 0
        var at = 1
        while true {
            guard at < plain.count, shift < 35 else { throw damaged() }
            let b = plain[at]
            at += 1
            count |= Int(b & 0x7F) << shift
            if b & 0x80 == 0 { break }
            shift += 7
        }
        let size = chunks.chunkPlain(keyCount: key.count)
        let tail = UnsafeRawBufferPointer(rebasing: plain[at...])
        guard count > 0, count <= Int(UInt32.max) else { throw damaged() }
        let out = arena.allocate(count * size + tail.count)
        try withUnsafeTemporaryAllocation(byteCount: key.count + 4, alignment: 1) { ck in
            UnsafeMutableRawBufferPointer(rebasing: ck[..<key.count]).copyMemory(from: key)
            for i in 0..<count {
                ck.storeBytes(of: UInt32(i).bigEndian, toByteOffset: key.count, as: UInt32.self)
                var k = MDB_val(mv_size: ck.count, mv_data: ck.baseAddress)
                var v = MDB_val()
                let rc = mdb_get(txn, chunks.dbi, &k, &v)
                if rc == MDB_NOTFOUND { throw damaged() }
                try check(rc, "mdb_get(\(chunks.name))")
                let stored = UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
                let target = UnsafeMutableRawBufferPointer(rebasing: out[(i * size)..<((i + 1) * size)])
                if let p = chunks.protection, p.sealsValues {
                    guard stored.count == size + p.sealer.overhead else { throw damaged() }
                    try p.sealer.open(stored, domain: chunks.domain, key: UnsafeRawBufferPointer(ck), into: target)
                } else {
                    guard stored.count == size else { throw damaged() }
                    target.copyMemory(from: stored)
                }
            }
        }
        UnsafeMutableRawBufferPointer(rebasing: out[(count * size)...]).copyMemory(from: tail)
        return UnsafeRawBufferPointer(out)
    }

    /// The chunks stored for the row under the stored key `key` of a chunked table, as LMDB
    /// holds them, in order (none for a row kept whole): with the row's own stored bytes, what
    /// the row is on disk.
    public func storedChunks(_ db: Database, storedKey key: UnsafeRawBufferPointer) throws -> [UnsafeRawBufferPointer] {
        guard let chunks = db.chunks else { return [] }
        var out: [UnsafeRawBufferPointer] = []
        try walkChunks(chunks, key) { out.append($0) }
        return out
    }

    /// How many chunk rows the companion of a chunked table holds (0 for any other table).
    public func chunkRows(_ db: Database) throws -> Int {
        guard let chunks = db.chunks else { return 0 }
        var s = MDB_stat()
        try check(mdb_stat(txn, chunks.dbi, &s), "mdb_stat(\(chunks.name))")
        return s.ms_entries
    }

    /// Walks the chunk rows under the stored key `key` (``walkChunkRows(_:_:_:under:deleting:_:)``).
    private func walkChunks(_ chunks: ChunkTable, _ key: UnsafeRawBufferPointer, deleting: Bool = false, _ body: (UnsafeRawBufferPointer) -> Void = { _ in })
        throws
    {
        try walkChunkRows(txn, chunks.dbi, chunks.name, under: key, deleting: deleting, body)
    }

    /// Deletes the chunks stored under the stored key `key` (a row about to be replaced or
    /// deleted), whatever its head says.
    func removeChunks(_ db: Database, storedKey key: UnsafeRawBufferPointer) throws {
        guard let chunks = db.chunks else { return }
        forgetAssembled(db, storedKey: key)
        try walkChunks(chunks, key, deleting: true)
    }

    /// ``put(_:key:value:flags:)`` into a chunked table: the old row's chunks go (unless
    /// `.append`: the key is new), and a value too large for a leaf page is written as chunks and
    /// a head.
    func putChunked(_ db: Database, _ chunks: ChunkTable, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags) throws -> Bool {
        guard value.first != chunks.mark else {
            throw StorageError(code: .invalidArgument, message: "a value of the chunked table \(db.name) starts with its chunks' mark")
        }
        let mainOverhead = db.protection?.valueOverhead ?? 0
        return try withStoredKey(db, db.protection, key) { k in
            if flags.contains(.noOverwrite), try getRaw(db, key: k) != nil { return false }
            if !flags.contains(.append) { try removeChunks(db, storedKey: k) }
            forgetAssembled(db, storedKey: k)
            if chunks.fitsInline(value.count, keyCount: k.count, mainOverhead: mainOverhead) {
                return try putValue(db, key: key, value: value, flags: flags)
            }
            let size = chunks.chunkPlain(keyCount: k.count)
            let count = value.count / size
            try withUnsafeTemporaryAllocation(byteCount: k.count + 4, alignment: 1) { ck in
                UnsafeMutableRawBufferPointer(rebasing: ck[..<k.count]).copyMemory(from: k)
                for i in 0..<count {
                    ck.storeBytes(of: UInt32(i).bigEndian, toByteOffset: k.count, as: UInt32.self)
                    let piece = UnsafeRawBufferPointer(rebasing: value[(i * size)..<((i + 1) * size)])
                    let chunkFlags = UInt32(flags.contains(.append) ? MDB_APPEND : 0)
                    if let p = chunks.protection, p.sealsValues {
                        _ = try reserve(chunks.dbi, chunks.name, UnsafeRawBufferPointer(ck), size + p.sealer.overhead, chunkFlags) { out in
                            p.sealer.seal(piece, domain: chunks.domain, key: UnsafeRawBufferPointer(ck), into: out)
                        }
                    } else {
                        _ = try reserve(chunks.dbi, chunks.name, UnsafeRawBufferPointer(ck), size, chunkFlags) { $0.copyMemory(from: piece) }
                    }
                }
            }
            var head: [UInt8] = [chunks.mark]
            var n = UInt64(count)
            while n >= 0x80 {
                head.append(UInt8(n & 0x7F) | 0x80)
                n >>= 7
            }
            head.append(UInt8(n))
            head.append(contentsOf: UnsafeRawBufferPointer(rebasing: value[(count * size)...]))
            return try head.withUnsafeBytes { try putValue(db, key: key, value: $0, flags: flags) }
        }
    }
}

extension Protection {
    /// The bytes a stored value takes beyond its plaintext: its seal's, when values are sealed.
    var valueOverhead: Int { sealsValues ? sealer.overhead : 0 }
}

/// Walks the chunk rows under the stored key `key` in the companion table `dbi` (named `name`):
/// keys `key ‖ u32be index`, in order. `body` gets each stored value, or, `deleting`, each row
/// is deleted instead. A companion holding no chunk is not searched: most rows of a chunked
/// table are kept whole, and every write and every link of a sealed chain asks.
func walkChunkRows(
    _ txn: OpaquePointer?, _ dbi: MDB_dbi, _ name: String, under key: UnsafeRawBufferPointer, deleting: Bool = false,
    _ body: (UnsafeRawBufferPointer) -> Void = { _ in }
) throws {
    var s = MDB_stat()
    try check(mdb_stat(txn, dbi, &s), "mdb_stat(\(name))")
    guard s.ms_entries > 0 else { return }
    var c: OpaquePointer?
    try check(mdb_cursor_open(txn, dbi, &c), "mdb_cursor_open(\(name))")
    defer { mdb_cursor_close(c) }
    try withUnsafeTemporaryAllocation(byteCount: key.count + 4, alignment: 1) { first in
        UnsafeMutableRawBufferPointer(rebasing: first[..<key.count]).copyMemory(from: key)
        first.storeBytes(of: UInt32(0), toByteOffset: key.count, as: UInt32.self)
        var k = MDB_val(mv_size: first.count, mv_data: first.baseAddress)
        var v = MDB_val()
        var rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)
        while rc == 0 {
            let found = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
            guard found.count == key.count + 4, memcmp(found.baseAddress!, key.baseAddress!, key.count) == 0 else { break }
            if deleting {
                try check(mdb_cursor_del(c, 0), "mdb_cursor_del(\(name))")
                k = MDB_val(mv_size: first.count, mv_data: first.baseAddress)
                rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)
            } else {
                body(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
                rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)
            }
        }
        if rc != 0 && rc != MDB_NOTFOUND { try check(rc, "mdb_cursor_get(\(name))") }
    }
}
