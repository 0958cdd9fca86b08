import CZstd
import LMDB

/// Packed envelopes: how `strata compact` stores the log's envelopes.
///
/// An envelope is about 330 bytes, most of it what every envelope of a store repeats: its type,
/// its stream, its metadata's keys and much of their values (a run id, a URL's prefix, a source's
/// name). Stored alone, each pays for all of it. A compaction trains a zstd dictionary on a sample
/// of the store's envelopes (`ZDICT_trainFromBuffer`), keeps it in `meta`, and stores every
/// envelope compressed against it, without its own hash, which a read computes again from the
/// bytes before it (the hash is SHA-256 of them: the chain is the same chain):
///
/// ```
/// u8 2 | 4-byte seal: the first bytes of SHA-256(what follows) | varint n (the envelope's bytes
/// before its hash) | zstd frame of them (magicless, no content size, no dictionary id, no
/// checksum), against meta/envelope-dictionary
/// ```
///
/// A plain envelope starts with its format, 1, so the two forms sit side by side: appends after a
/// compaction store plain envelopes until the next one. On the scraping history: 333 bytes an
/// envelope become about 130, and in blocks about 74 (docs/benchmarks.md, "Real scraping
/// histories"). Every read checks the
/// seal, so damage to any stored byte is an error there and a finding of `verify` (a frame
/// header has bits a decoder ignores: the frame alone would not show every flip). The dictionary
/// carries its own SHA-256. In an encrypted store the packed envelope is what is sealed
/// (``EnvelopeRepack``).
extension Envelope {
    static let packedMark: UInt8 = 2

    /// The plain envelope of a stored `events` value, in memory the transaction owns (a plain one
    /// is returned as it is).
    static func plain(_ stored: UnsafeRawBufferPointer, dictionary: EnvelopeDictionary?, in txn: Transaction) throws -> UnsafeRawBufferPointer {
        guard stored.first == packedMark else { return stored }
        return try unpack(stored, dictionary: dictionary) { txn.scratch($0) }
    }

    /// The plain envelope of a stored `events` value, copied.
    static func plain(_ stored: UnsafeRawBufferPointer, dictionary: EnvelopeDictionary?) throws -> [UInt8] {
        guard stored.first == packedMark else { return [UInt8](stored) }
        var buffer: UnsafeMutableRawBufferPointer?
        defer { buffer?.deallocate() }
        let plain = try unpack(stored, dictionary: dictionary) { n in
            buffer = .allocate(byteCount: n, alignment: 1)
            return buffer!
        }
        return [UInt8](plain)
    }

    private static func unpack(
        _ stored: UnsafeRawBufferPointer, dictionary: EnvelopeDictionary?,
        allocate: (Int) -> UnsafeMutableRawBufferPointer
    ) throws -> UnsafeRawBufferPointer {
        guard let dictionary else {
            throw EventStoreError.corrupted("a packed event envelope, and the store has no envelope dictionary")
        }
        var r = ByteReader(stored)
        do {
            guard sealMatches(stored) else { throw ByteReader.Truncated() }
            _ = try r.slice(1 + sealLength)
            let n = Int(try r.varint())
            guard n > 0, n <= 1 << 20 else { throw ByteReader.Truncated() }
            let frame = UnsafeRawBufferPointer(rebasing: stored[r.offset...])
            let out = allocate(n + 32)
            let body = UnsafeMutableRawBufferPointer(rebasing: out[0..<n])
            try ZstdContext.pooled { try $0.decompress(frame, dictionary: dictionary, into: body) }
            Hashing.sha256(UnsafeRawBufferPointer(body), into: UnsafeMutableRawBufferPointer(rebasing: out[n...]))
            return UnsafeRawBufferPointer(out)
        } catch {
            throw EventStoreError.corrupted("a packed event envelope does not match its seal or does not decompress (damaged)")
        }
    }

    static let sealLength = 4

    /// Whether a packed envelope or block (`mark | seal | rest`) carries the seal of its rest.
    static func sealMatches(_ stored: UnsafeRawBufferPointer) -> Bool {
        guard stored.count > 1 + sealLength else { return false }
        return withUnsafeTemporaryAllocation(byteCount: 32, alignment: 1) { digest in
            Hashing.sha256(UnsafeRawBufferPointer(rebasing: stored[(1 + sealLength)...]), into: digest)
            return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(digest)[0..<sealLength]).elementsEqual(stored[1..<(1 + sealLength)])
        }
    }

    /// Writes the seal of `bytes` (`mark | seal | rest`, the seal's place zero) into it.
    static func seal(_ bytes: inout [UInt8]) {
        let start = 1 + sealLength
        let seal = bytes.withUnsafeBytes { Hashing.sha256(UnsafeRawBufferPointer(rebasing: $0[start...]), prefix: sealLength) }
        bytes.replaceSubrange(1..<start, with: seal)
    }
}

/// A store's envelope dictionary (``Envelope/packedMark``), ready for decompression: shared by
/// every reader (a zstd `DDict` is read-only once made). `meta/envelope-dictionary` holds the
/// SHA-256 of the dictionary, then the dictionary.
// Unchecked: a raw zstd `DDict` pointer, read-only once made.
final class EnvelopeDictionary: @unchecked Sendable {
    static let metaKey = Array("envelope-dictionary".utf8)
    let bytes: [UInt8]
    let ddict: OpaquePointer

    /// The dictionary `meta` holds as `stored`; nil when it does not match its digest.
    init?(stored: [UInt8]) {
        guard stored.count > 32 else { return nil }
        let bytes = [UInt8](stored[32...])
        guard Hashing.sha256(bytes) == [UInt8](stored[..<32]),
            let d = bytes.withUnsafeBytes({ ZSTD_createDDict($0.baseAddress, $0.count) })
        else { return nil }
        self.bytes = bytes
        ddict = d
    }

    /// What `meta` holds for `dictionary`.
    static func stored(_ dictionary: [UInt8]) -> [UInt8] { Hashing.sha256(dictionary) + dictionary }

    deinit { ZSTD_freeDDict(ddict) }
}

/// Packs envelopes against a dictionary trained on a sample of them (a compaction's side).
final class EnvelopePacker {
    let dictionary: [UInt8]
    /// Whether blocks lay their envelopes out by column (``EnvelopeColumns``, format 11), as
    /// every compaction does; false writes the row-wise blocks of format 8 (what a test reads
    /// back as an older store's).
    let byColumn: Bool
    private let cdict: OpaquePointer
    private let blockCDict: OpaquePointer
    private let cctx: OpaquePointer
    /// Fewer envelopes than this are left plain: too few to train on, too few to matter.
    static let minimumEnvelopes = 256
    static let sampleLimit = 8_192
    /// Envelopes a sample holds: the dictionary is trained on what blocks compress, runs of
    /// envelopes by column (on the fires history, 58.7 bytes an envelope against a dictionary
    /// trained on single envelopes, 55.3 on runs of 16).
    static let sampleRun = 16
    /// A dictionary that fits one overflow page of `meta` with its header.
    static let dictionaryCapacity = 4_064
    static let level: Int32 = 3
    /// A block's level: a block is compressed a few times to fit its page, once per compaction.
    static let blockLevel: Int32 = 9

    /// A packer with a dictionary trained on `samples` (envelopes without their previous hashes
    /// and hashes, runs of them by column when `byColumn`), or nil when zstd cannot train one
    /// from them.
    init?(samples: [[UInt8]], byColumn: Bool = true) {
        guard !samples.isEmpty else { return nil }
        self.byColumn = byColumn
        let joined = samples.flatMap { $0 }
        let sizes = samples.map { $0.count }
        var dict = [UInt8](repeating: 0, count: Self.dictionaryCapacity)
        let n = dict.withUnsafeMutableBytes { d in
            joined.withUnsafeBytes { s in
                sizes.withUnsafeBufferPointer { z in
                    ZDICT_trainFromBuffer(d.baseAddress, d.count, s.baseAddress, z.baseAddress, UInt32(z.count))
                }
            }
        }
        guard ZDICT_isError(n) == 0, n > 0 else { return nil }
        dict.removeLast(dict.count - n)
        guard let c = dict.withUnsafeBytes({ ZSTD_createCDict($0.baseAddress, $0.count, Self.level) }) else { return nil }
        guard let b = dict.withUnsafeBytes({ ZSTD_createCDict($0.baseAddress, $0.count, Self.blockLevel) }) else {
            ZSTD_freeCDict(c)
            return nil
        }
        guard let x = ZSTD_createCCtx() else {
            ZSTD_freeCDict(c)
            ZSTD_freeCDict(b)
            return nil
        }
        dictionary = dict
        cdict = c
        blockCDict = b
        cctx = x
    }

    deinit {
        ZSTD_freeCDict(cdict)
        ZSTD_freeCDict(blockCDict)
        ZSTD_freeCCtx(cctx)
    }

    /// `content` as a magicless zstd frame without content size, dictionary id or checksum,
    /// against the dictionary, at ``blockLevel`` for a block or ``level`` for one envelope; nil
    /// when zstd fails.
    func compress(_ content: UnsafeRawBufferPointer, block: Bool) -> [UInt8]? {
        ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0)
        ZSTD_CCtx_setParameter(cctx, ZstdContext.formatParameter, ZstdContext.magicless)
        ZSTD_CCtx_refCDict(cctx, block ? blockCDict : cdict)
        let bound = ZSTD_compressBound(content.count)
        var out = [UInt8](repeating: 0, count: bound)
        let n = out.withUnsafeMutableBytes { o in ZSTD_compress2(cctx, o.baseAddress, bound, content.baseAddress, content.count) }
        guard ZSTD_isError(n) == 0 else { return nil }
        out.removeLast(bound - n)
        return out
    }

    /// The packed form of the plain envelope `plain`, or nil when it stays plain (it is not a
    /// format-1 envelope that hashes to its hash, or packing would not make it smaller). A
    /// damaged envelope stays plain: packed, its hash would be computed again from the damaged
    /// bytes, and only the next event's link would show the damage.
    func pack(_ plain: UnsafeRawBufferPointer) -> [UInt8]? {
        guard plain.first == Envelope.format, Envelope.selfConsistent(plain) else { return nil }
        let body = UnsafeRawBufferPointer(rebasing: plain[0..<(plain.count - 32)])
        guard let frame = compress(body, block: false) else { return nil }
        var w = ByteWriter(capacity: frame.count + 15)
        w.u8(Envelope.packedMark)
        w.raw(repeatElement(0, count: Envelope.sealLength))
        w.varint(body.count)
        w.raw(frame)
        Envelope.seal(&w.bytes)
        return w.bytes.count < plain.count ? w.bytes : nil
    }
}

extension ZstdContext {
    /// Decompresses a packed envelope's frame against `dictionary` into `out` (exactly its size).
    func decompress(_ frame: UnsafeRawBufferPointer, dictionary: EnvelopeDictionary, into out: UnsafeMutableRawBufferPointer) throws {
        ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters)
        defer { ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters) }
        ZSTD_DCtx_setParameter(dctx, Self.decompressFormatParameter, Self.magicless)
        ZSTD_DCtx_refDDict(dctx, dictionary.ddict)
        let n = ZSTD_decompressDCtx(dctx, out.baseAddress, out.count, frame.baseAddress, frame.count)
        guard ZSTD_isError(n) == 0, n == out.count else { throw ByteReader.Truncated() }
    }
}

/// What a compaction's copy stores for the envelopes (``EventStore/compactedCopy(into:)``): each
/// read plain (a packed one or a block against the store's dictionary, a sealed one opened), runs
/// of them that chain stored as blocks (``EnvelopeBlock``) and the rest packed alone, against the
/// new dictionary, sealed again in an encrypted store. An encrypted store's `sealed-chain` covers
/// the stored rows, so its links are computed again over the new rows as they are written
/// (`events` is copied before `sealed-chain`: tables go in the order of their names), and the
/// dictionary, trained on plaintext, is sealed in `meta` like any other value.
final class EnvelopeRepack {
    private let packer: EnvelopePacker
    private let old: EnvelopeDictionary?
    private let cipher: StoreCipher?
    private let events: Database
    private let meta: Database
    /// The most bytes a stored block may have: what stays in a leaf page under an 8-byte key.
    private let capacity: Int
    /// The new `sealed-chain` links, by seq (an encrypted store).
    private var links: [[UInt8]] = []
    /// Envelopes read and not yet stored, in seq order, each with whether it can go in a block
    /// and whether it can follow the one before it there (worked out once, as it is read).
    private var pending: [(seq: UInt64, plain: [UInt8], blockable: Bool, follows: Bool)] = []
    /// The envelope read last, for the next one's link.
    private var lastRead: (seq: UInt64, plain: [UInt8])?
    /// How many envelopes the last block held: where the next one's search starts.
    private var guess = 32

    init(packer: EnvelopePacker, schema: LogSchema, capacity: Int) {
        self.packer = packer
        old = schema.envelopeDictionary
        cipher = schema.cipher
        events = schema.events
        meta = schema.meta
        self.capacity = capacity
    }

    /// A ``Environment/PackProducer`` of `events`.
    func envelopes(_ snapshot: Environment.PackSnapshot, _ emit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) throws {
        try snapshot.each("events") { key, stored in
            guard key.count == 8 else { throw EventStoreError.corrupted("an event key of \(key.count) bytes is not a seq") }
            let seq = UInt64(bigEndianBytes: key)
            let opened = try cipher.map { try $0.opened(stored, domain: events.domain, key: key) } ?? [UInt8](stored)
            try opened.withUnsafeBytes { o in
                if EnvelopeBlock.isBlock(o.first) {
                    let run = try EnvelopeBlock.envelopes(o, last: seq, dictionary: old)
                    for (i, e) in run.enumerated() { read(seq - UInt64(run.count - 1 - i), e) }
                } else {
                    read(seq, try Envelope.plain(o, dictionary: old))
                }
            }
            while pending.count >= EnvelopeBlock.window { try store(snapshot, emit) }
        }
        while !pending.isEmpty { try store(snapshot, emit) }
    }

    /// Takes the envelope of `seq` into `pending`.
    private func read(_ seq: UInt64, _ plain: [UInt8]) {
        let blockable = EnvelopePacker.blockable(plain)
        let follows = blockable && lastRead.map { $0.seq + 1 == seq && EnvelopePacker.chains(plain, after: $0.plain) } ?? false
        pending.append((seq, plain, blockable, follows))
        lastRead = (seq, plain)
    }

    /// Stores the first pending envelopes: as many as a block of them takes, or the first alone.
    private func store(_ snapshot: Environment.PackSnapshot, _ emit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) throws {
        var run = 0
        while run < pending.count, run < EnvelopeBlock.window, run == 0 ? pending[run].blockable : pending[run].follows { run += 1 }
        let taken: Int
        let row: [UInt8]
        if run >= 2, let block = packer.block(pending[0..<run].map(\.plain)[...], capacity: capacity, guess: guess) {
            taken = block.count
            guess = block.count
            row = block.bytes
        } else {
            taken = 1
            row = pending[0].plain.withUnsafeBytes { packer.pack($0) } ?? pending[0].plain
        }
        let first = pending[0].seq
        let last = pending[taken - 1].seq
        pending.removeFirst(taken)
        try withUnsafeBytes(of: last.bigEndian) { key in
            let stored = row.withUnsafeBytes { r in cipher.map { $0.sealed(r, domain: events.domain, key: key) } ?? row }
            try stored.withUnsafeBytes { try emit(key, $0) }
            guard cipher != nil else { return }
            for seq in first...last {
                guard seq == UInt64(links.count) + 1 else {
                    throw EventStoreError.corrupted("the log is not a run of seqs from 1 at seq \(seq)")
                }
                try withUnsafeBytes(of: seq.bigEndian) { k in
                    let body = try snapshot.get("bodies", key: k)
                    let chunks = try snapshot.storedChunks("bodies", key: k)
                    let link = stored.withUnsafeBytes { s in
                        SealedChain.digest(previous: links.last ?? Envelope.zeroHash, envelope: seq == last ? s : nil, body: body, chunks: chunks)
                    }
                    links.append(link)
                }
            }
        }
    }

    /// A ``Environment/PackRewrite`` of `sealed-chain`: the link computed over the new rows.
    func link(_ key: UnsafeRawBufferPointer, _ stored: UnsafeRawBufferPointer, _ snapshot: Environment.PackSnapshot) throws -> [UInt8]? {
        let seq = key.count == 8 ? UInt64(bigEndianBytes: key) : 0
        guard seq >= 1, seq <= UInt64(links.count) else {
            throw EventStoreError.corrupted("the sealed chain has a link for seq \(seq), which the log does not hold")
        }
        return links[Int(seq - 1)]
    }

    /// The copy's `meta` rows: its dictionary (sealed in an encrypted store) and its format.
    func metaEntries() -> [(key: [UInt8], value: [UInt8])] {
        var dictionary = EnvelopeDictionary.stored(packer.dictionary)
        if let cipher {
            dictionary = dictionary.withUnsafeBytes { d in EnvelopeDictionary.metaKey.withUnsafeBytes { cipher.sealed(d, domain: meta.domain, key: $0) } }
        }
        return [(EnvelopeDictionary.metaKey, dictionary), (LogSchema.formatKey, LogSchema.packedFormat.bigEndianBytes)]
    }
}
