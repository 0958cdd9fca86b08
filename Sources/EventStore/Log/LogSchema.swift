import LMDB

/// The LMDB databases of a store and their key layouts (see docs/architecture.md).
///
/// | database | key | value |
/// |---|---|---|
/// | `events` | seq u64be | envelope (``Envelope``) |
/// | `ids` | event id: a lowercase UUID's 16 bytes after 0x00, else its UTF-8 (``IDKeys``) | seq u64be |
/// | `by-stream` | stream, 0x00, the first seq of the row u64be | the later seqs' gaps (``IndexBlocks``) |
/// | `by-type` | type, 0x00, the first seq of the row u64be | the later seqs' gaps |
/// | `by-time` | effective time (µs, sign-flipped u64be), seq u64be, of the row's first event | the later events' time gaps |
/// | `body-index` | the first 8 bytes of the body's SHA-256 (``BodyIndex``) | seq u64be of the event that stored it |
/// | `blobs` | SHA-256 of the body | pointer: codec 3, seq u64be of the event that stored it (format 2, and format 3 for a body whose prefix another body holds); or, written by format 1, the stored body itself (``BlobCodec``) |
/// | `bodies` | seq u64be of the event that first carried the body | codec, raw size, bytes (``BlobCodec``) |
/// | `meta` | name | counters, format, body-index prefix length |
/// | `checkpoints` | projection name | varint version, u64be last applied seq |
/// | `quarantine` | projection name, 0x00, seq u64be | reason (UTF-8) |
/// | `p/<projection>/<table>` | the projection's own | the projection's own |
struct LogSchema: Sendable {
    let events: Database
    let ids: Database
    let byStream: Database
    let byType: Database
    let byTime: Database
    let blobs: Database
    let bodies: Database
    /// Finds bodies by hash (`body-index`, `blobs`, `bodies`).
    let bodyIndex: BodyIndex
    let lineage: Database
    /// Bodies rewritten in place (an erasure): the original SHA-256 → the seq of the event that
    /// asked for it, the SHA-256 of what the row holds now, and the original again
    /// (``EventStore/rewriteBodies(_:by:)``).
    let rewritten: Database
    /// Whether, at open, the store's bodies were still being rewritten as delta chains.
    let migratingToDeltaChains: Bool
    let meta: Database
    let checkpoints: Database
    let quarantine: Database
    let projectionTables: [String: TableSet]
    /// The store's cipher when it is encrypted (``StoreCipher``).
    let cipher: StoreCipher?
    /// In an encrypted store, seq → SHA-256 over the hash before it and the event's stored
    /// (sealed) envelope and body rows: a chain over what is stored, checked without the key.
    let sealedChain: Database?
    /// What the envelopes a compaction packed are compressed against (``Envelope/packedMark``);
    /// nil until a compaction packs them.
    let envelopeDictionary: EnvelopeDictionary?

    /// 2: bodies live in `bodies`, keyed by the seq that stored them (appended, so a batch's new
    /// bodies fill fresh pages in order instead of dirtying a random `blobs` page each), and
    /// `blobs` maps each hash to that seq. Format 1 stores (bodies inline in `blobs`) are read as
    /// they are and become format 2 at open; their old rows keep working.
    /// 3: new bodies are found through `body-index`, by an 8-byte prefix of their hash (half the
    /// random pages an append dirties); older stores become format 3 at open, and their `blobs`
    /// rows keep working.
    /// 4: bodies stored as delta chains.
    /// 5: a compaction packed the envelopes (``Envelope/packedMark``), which a strata reading
    /// format 4 at most would not read; only a compaction's copy was marked so.
    /// 6: the stream, type and time indexes hold a row per block of events (``IndexBlocks``),
    /// and a store without a key keeps a UUID id's `ids` key as its 16 bytes (``IDKeys``),
    /// which a strata reading format 5 at most would take for a row per event and so miss
    /// events. An older store's rows are rewritten so as it opens (``IndexBlocks/reblock(_:postings:_:)``);
    /// a row of one entry is read as a block of one all the same.
    /// 7: a body too large for half a page is kept as page-filling chunks in `bodies.chunks` and
    /// a head in `bodies` (``LMDB/ChunkTable``), which a strata reading format 6 at most would
    /// take for a body of an unknown codec. Rows written before are read as they are; nothing
    /// is rewritten as a store opens.
    /// 8: a compaction stores runs of envelopes as blocks, each keyed by its last seq
    /// (``EnvelopeBlock``), which a strata reading format 7 at most would take for a missing
    /// event. Rows written before are read as they are; nothing is rewritten as a store opens.
    /// 9: a pretty-printed JSON body is stored minified with its layout (``BlobCodec`` codec 5,
    /// ``JSONLayout``), which a strata reading format 8 at most would take for a body of an
    /// unknown codec. Rows written before are read as they are; nothing is rewritten as a store
    /// opens.
    /// 10: a list's version may be stored as its skeleton and the elements it brings to its
    /// window (``BlobCodec`` codec 6, ``BodyWindow``), which a strata reading format 9 at most
    /// would take for a body of an unknown codec. Rows written before are read as they are;
    /// nothing is rewritten as a store opens.
    /// 11: a compaction lays a block's envelopes out by column (``EnvelopeColumns``, marked 4),
    /// which a strata reading format 10 at most would take for an envelope of an unknown kind.
    /// Blocks written before are read as they are; nothing is rewritten as a store opens.
    static let formatVersion: UInt64 = 11
    /// What a compaction's copy is marked: since format 6, the store's own format (6 reads
    /// packed envelopes too).
    static let packedFormat: UInt64 = formatVersion
    static let readableFormats: ClosedRange<UInt64> = 1...11
    static let formatKey = Array("format".utf8)
    /// The first byte of a chunked row's head in a projection's table (``Projection/chunkedTables``).
    static let projectionChunkMark: UInt8 = 0xFD
    /// Present while the bodies of a store older than format 4 are being rewritten as delta
    /// chains: u64be, the last seq done (``EventStore`` resumes from it at the next open).
    static let deltaMigrationKey = Array("delta-migration".utf8)

    /// `bodyPrefix`: the `body-index` key length of a store created now (see ``BodyIndex``);
    /// an existing store keeps its own.
    ///
    /// `encryption`: the key given for the store (a new store is created encrypted under it), or
    /// the cipher of the store a scratch copy is made of.
    init(
        opening env: Environment, projections: [any Projection], bodyPrefix: Int = BodyIndex.defaultPrefix,
        encryption: Encryption = .none
    ) throws {
        precondition((1...32).contains(bodyPrefix), "a body-index prefix is 1–32 bytes")
        var prefix = bodyPrefix
        var tables: [String: TableSet] = [:]
        var migrating = false
        var dbs: [String: Database] = [:]
        var cipher: StoreCipher?
        var dictionary: EnvelopeDictionary?
        try env.write { txn in
            let prefixKey = Array("body-prefix".utf8)
            let meta = try env.openDatabase("meta", in: txn)
            let isNew = try txn.get(meta, key: Self.formatKey) == nil
            cipher = try Self.cipher(meta: meta, isNew: isNew, encryption: encryption, txn, path: env.path)
            func protection(_ name: String) -> Protection? {
                guard let cipher else { return nil }
                switch name {
                case "events", "bodies", "quarantine": return Protection(sealer: cipher)
                case "ids" where cipher.version >= 2:
                    return Protection(
                        sealer: cipher, sealsValues: false, keyDigestLength: 16,
                        keyOrderLength: EventIDOrder.length, keyOrder: EventIDOrder.write)
                case "ids", "lineage": return Protection(sealer: cipher, sealsValues: name == "lineage", keyDigestLength: 16)
                case "blobs", "rewritten": return Protection(sealer: cipher, sealsValues: false, keyDigestLength: 32)
                default: return nil
                }
            }
            dbs["meta"] = meta
            for name in ["events", "ids", "by-stream", "by-type", "by-time", "blobs", "bodies", "checkpoints", "quarantine", "lineage", "rewritten"] {
                dbs[name] = try env.openDatabase(name, in: txn, protection: protection(name), chunked: name == "bodies")
            }
            if cipher != nil { dbs["sealed-chain"] = try env.openDatabase("sealed-chain", in: txn) }
            let sliceForms = PayloadSlice.SharedForms()
            for p in projections {
                var set: [String: Database] = [:]
                let sealed = cipher.map { Protection(sealer: $0) }
                let chunked = p.chunkedTables
                for t in p.tables {
                    set[t] = try env.openDatabase(
                        TableSet.databaseName(projection: p.name, table: t), in: txn, protection: sealed, chunked: chunked.contains(t),
                        chunkMark: Self.projectionChunkMark)
                }
                // A table the projection no longer keeps is emptied (its version changed with it,
                // so it is being rebuilt without it): its pages go back to the free list.
                for t in p.retiredTables where !txn.readOnly {
                    guard let db = try? env.openDatabase(TableSet.databaseName(projection: p.name, table: t), in: txn, create: false) else { continue }
                    if try txn.stat(db).entries > 0 { try txn.clear(db) }
                }
                var names: Database?
                if cipher != nil {
                    names = try env.openDatabase(TableSet.databaseName(projection: p.name, table: TableSet.namesTable), in: txn, protection: sealed)
                }
                tables[p.name] = TableSet(databases: set, cipher: cipher, names: names, logBodies: dbs["bodies"], sliceForms: sliceForms)
            }
            if let f = try txn.get(meta, key: Self.formatKey) {
                let stored = f.withUnsafeBytes { UInt64(bigEndianBytes: $0) }
                guard Self.readableFormats.contains(stored) else {
                    throw EventStoreError.corrupted(
                        "the store has format \(stored) but this strata reads formats \(Self.readableFormats.lowerBound)–\(Self.readableFormats.upperBound); use a matching strata version"
                    )
                }
                if let p = try txn.get(meta, key: prefixKey) {
                    let n = p.count == 8 ? p.withUnsafeBytes { UInt64(bigEndianBytes: $0) } : 0
                    guard (1...32).contains(n) else { throw EventStoreError.corrupted("the store's body-index prefix length is damaged") }
                    prefix = Int(n)
                } else {
                    // A store older than format 3: the default from now on.
                    prefix = BodyIndex.defaultPrefix
                    try txn.put(meta, key: prefixKey, value: UInt64(prefix).bigEndianBytes)
                }
                if stored < Self.formatVersion {
                    // Bodies stored whole become delta chains, resumably, before the store is used.
                    if stored < 4 { _ = try txn.put(meta, key: Self.deltaMigrationKey, value: UInt64(0).bigEndianBytes) }
                    if stored < 6 {
                        // A row per event becomes a row per block of them (a second or two for a
                        // million events, once).
                        try IndexBlocks.reblock(dbs["by-stream"]!, postings: true, txn)
                        try IndexBlocks.reblock(dbs["by-type"]!, postings: true, txn)
                        try IndexBlocks.reblock(dbs["by-time"]!, postings: false, txn)
                        if cipher == nil { try IDKeys.compactAll(dbs["ids"]!, txn) }
                    }
                    _ = try txn.put(meta, key: Self.formatKey, value: Self.formatVersion.bigEndianBytes)
                }
                migrating = try txn.get(meta, key: Self.deltaMigrationKey) != nil
            } else {
                try txn.put(meta, key: Self.formatKey, value: Self.formatVersion.bigEndianBytes)
                try txn.put(meta, key: prefixKey, value: UInt64(prefix).bigEndianBytes)
            }
            if let d = try txn.get(meta, key: EnvelopeDictionary.metaKey) {
                // Sealed in an encrypted store (it is trained on the envelopes' plaintext).
                let opened =
                    try cipher.map { c in
                        try d.withUnsafeBytes { s in try EnvelopeDictionary.metaKey.withUnsafeBytes { try c.opened(s, domain: meta.domain, key: $0) } }
                    } ?? d
                guard let loaded = EnvelopeDictionary(stored: opened) else {
                    throw EventStoreError.corrupted(
                        "the store's envelope dictionary (meta/envelope-dictionary) does not match its digest: it is damaged, and the envelopes compaction packed cannot be read; restore the store from a copy"
                    )
                }
                dictionary = loaded
            }
            // Opened once the prefix length is known: an encrypted store digests its keys to it.
            dbs["body-index"] = try env.openDatabase(
                "body-index", in: txn,
                protection: cipher.map { Protection(sealer: $0, sealsValues: false, keyDigestLength: max(8, prefix)) })
        }
        self.cipher = cipher
        envelopeDictionary = dictionary
        sealedChain = dbs["sealed-chain"]
        events = dbs["events"]!
        ids = dbs["ids"]!
        byStream = dbs["by-stream"]!
        byType = dbs["by-type"]!
        byTime = dbs["by-time"]!
        blobs = dbs["blobs"]!
        bodies = dbs["bodies"]!
        lineage = dbs["lineage"]!
        rewritten = dbs["rewritten"]!
        migratingToDeltaChains = migrating
        bodyIndex = BodyIndex(index: dbs["body-index"]!, blobs: blobs, bodies: bodies, events: events, prefix: prefix, envelopeDictionary: dictionary)
        meta = dbs["meta"]!
        checkpoints = dbs["checkpoints"]!
        quarantine = dbs["quarantine"]!
        projectionTables = tables
    }

    /// How a store is opened with respect to encryption.
    enum Encryption {
        /// No key: the store must not be encrypted.
        case none
        /// The key given: an encrypted store must be encrypted under it; a new store is created so.
        case key(StoreKey)
        /// The cipher of another store (its scratch copy shares its key, salt and digests).
        case copyOf(StoreCipher)
    }

    /// The store's cipher: checks the key against `meta/encryption`, or writes that record for a
    /// new store given a key.
    private static func cipher(meta: Database, isNew: Bool, encryption: Encryption, _ txn: Transaction, path: String) throws -> StoreCipher? {
        let record = try txn.get(meta, key: EncryptionRecord.key).map { try $0.withUnsafeBytes { try EncryptionRecord($0) } }
        switch (record, encryption) {
        case (nil, .none):
            return nil
        case (.some, .none):
            throw EventStoreError(
                code: .encryption,
                message: "the store at \(path) is encrypted, and no key was given (nothing was read or changed)", keyProblem: .missing)
        case (let r?, .key(let key)):
            let c = StoreCipher(key: key, salt: r.salt, version: r.version)
            guard c.check == r.check else {
                throw EventStoreError(
                    code: .encryption,
                    message: "the key given is not the key of the store at \(path); give the key file it was created with (nothing was read or changed)")
            }
            return c
        case (let r?, .copyOf(let c)):
            guard c.salt == r.salt, c.check == r.check, c.version == r.version else {
                throw EventStoreError(code: .encryption, message: "a scratch copy's key differs from its store's")
            }
            return c
        case (nil, .key(let key)):
            guard isNew else {
                throw EventStoreError(
                    code: .encryption,
                    message: "the store at \(path) is not encrypted, and a key was given (nothing was read or changed)", keyProblem: .unexpected)
            }
            var salt = [UInt8](repeating: 0, count: 16)
            salt.withUnsafeMutableBytes { RandomID.fill($0) }
            let c = StoreCipher(key: key, salt: salt)
            try txn.put(meta, key: EncryptionRecord.key, value: EncryptionRecord(salt: salt, check: c.check).encoded)
            return c
        case (nil, .copyOf(let c)):
            guard isNew else { throw EventStoreError(code: .encryption, message: "a scratch copy must be a new store") }
            try txn.put(meta, key: EncryptionRecord.key, value: EncryptionRecord(version: c.version, salt: c.salt, check: c.check).encoded)
            return c
        }
    }

    // MARK: Keys

    /// `name 0x00 seq(u64be)`: a key of the stream and type indexes.
    static func indexKey(_ name: String, _ seq: UInt64) -> [UInt8] { withIndexKey(name, seq) { [UInt8]($0) } }

    /// ``indexKey(_:_:)`` built on the stack, for `body` (no allocation: it runs for every append).
    static func withIndexKey<T>(_ name: String, _ seq: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        var name = name
        return try name.withUTF8 { utf8 in
            try withUnsafeTemporaryAllocation(byteCount: utf8.count + 9, alignment: 1) { key in
                key.copyMemory(from: UnsafeRawBufferPointer(utf8))
                key[utf8.count] = 0
                key.storeBytes(of: seq.bigEndian, toByteOffset: utf8.count + 1, as: UInt64.self)
                return try body(UnsafeRawBufferPointer(key))
            }
        }
    }

    /// `time(u64be, sign bit flipped so negative times sort first) seq(u64be)`: a key of the time index.
    static func timeKey(_ t: Timestamp, _ seq: UInt64) -> [UInt8] { withTimeKey(t, seq) { [UInt8]($0) } }

    /// ``timeKey(_:_:)`` built on the stack, for `body`.
    static func withTimeKey<T>(_ t: Timestamp, _ seq: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try withUnsafeBytes(of: (t.sortableBits.bigEndian, seq.bigEndian), body)
    }

    static let countersKey = Array("counters".utf8)
}

/// Running totals kept in `meta` and updated in every append transaction.
struct Counters: Equatable {
    var payloadBytes: UInt64 = 0  // sum of the sizes of all referenced bodies
    var payloadCount: UInt64 = 0
    var blobCount: UInt64 = 0  // distinct bodies
    var blobRawBytes: UInt64 = 0
    var blobStoredBytes: UInt64 = 0

    init() {}

    init(_ b: UnsafeRawBufferPointer) throws {
        var r = ByteReader(b)
        payloadBytes = try r.varint()
        payloadCount = try r.varint()
        blobCount = try r.varint()
        blobRawBytes = try r.varint()
        blobStoredBytes = try r.varint()
    }

    var encoded: [UInt8] {
        var w = ByteWriter(capacity: 40)
        w.varint(payloadBytes); w.varint(payloadCount); w.varint(blobCount)
        w.varint(blobRawBytes); w.varint(blobStoredBytes)
        return w.bytes
    }

    static func read(_ txn: Transaction, _ s: LogSchema) throws -> Counters {
        guard let b = try s.countersKey.withUnsafeBytes({ try txn.get(s.meta, key: $0) }) else { return Counters() }
        return try Counters(b)
    }

    func write(_ txn: Transaction, _ s: LogSchema) throws {
        try txn.put(s.meta, key: LogSchema.countersKey, value: encoded)
    }
}

extension LogSchema {
    var countersKey: [UInt8] { Self.countersKey }
}

extension LogSchema {
    /// The last seq whose effective time is at or before `time`, in `txn` (0 if none): one seek
    /// in `by-time` (``IndexBlocks/seq(asOf:_:_:)``).
    static func seq(asOf time: Timestamp, _ txn: Transaction, _ schema: LogSchema) throws -> UInt64 {
        try IndexBlocks.seq(asOf: time, txn, schema)
    }
}
