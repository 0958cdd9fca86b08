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
/// envelope become about 130 (docs/benchmarks.md, "Packed envelopes"). Every read checks the
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
            _ = try r.u8()
            let seal = try r.slice(sealLength)
            let sealed = UnsafeRawBufferPointer(rebasing: stored[r.offset...])
            guard
                withUnsafeTemporaryAllocation(
                    byteCount: 32, alignment: 1,
                    { digest in
                        Hashing.sha256(sealed, into: digest)
                        return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(digest)[0..<sealLength]).elementsEqual(seal)
                    })
            else { throw ByteReader.Truncated() }
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
    private let cdict: OpaquePointer
    private let cctx: OpaquePointer
    /// Fewer envelopes than this are left plain: too few to train on, too few to matter.
    static let minimumEnvelopes = 256
    static let sampleLimit = 8_192
    /// A dictionary that fits one overflow page of `meta` with its header.
    static let dictionaryCapacity = 4_064
    static let level: Int32 = 3

    /// A packer with a dictionary trained on `samples` (envelopes without their hashes), or nil
    /// when zstd cannot train one from them.
    init?(samples: [[UInt8]]) {
        guard samples.count >= Self.minimumEnvelopes else { return nil }
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
        guard let x = ZSTD_createCCtx() else { ZSTD_freeCDict(c); return nil }
        dictionary = dict
        cdict = c
        cctx = x
    }

    deinit {
        ZSTD_freeCDict(cdict)
        ZSTD_freeCCtx(cctx)
    }

    /// The packed form of the plain envelope `plain`, or nil when it stays plain (it is not a
    /// format-1 envelope that hashes to its hash, or packing would not make it smaller). A
    /// damaged envelope stays plain: packed, its hash would be computed again from the damaged
    /// bytes, and only the next event's link would show the damage.
    func pack(_ plain: UnsafeRawBufferPointer) -> [UInt8]? {
        guard plain.first == Envelope.format, Envelope.selfConsistent(plain) else { return nil }
        let body = UnsafeRawBufferPointer(rebasing: plain[0..<(plain.count - 32)])
        ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0)
        ZSTD_CCtx_setParameter(cctx, ZstdContext.formatParameter, ZstdContext.magicless)
        ZSTD_CCtx_refCDict(cctx, cdict)
        let bound = ZSTD_compressBound(body.count)
        var w = ByteWriter(capacity: bound + 15)
        w.u8(Envelope.packedMark)
        w.raw(repeatElement(0, count: Envelope.sealLength))
        w.varint(body.count)
        let head = w.bytes.count
        w.bytes.append(contentsOf: repeatElement(0, count: bound))
        let n = w.bytes.withUnsafeMutableBytes { o in
            ZSTD_compress2(cctx, o.baseAddress! + head, bound, body.baseAddress, body.count)
        }
        guard ZSTD_isError(n) == 0 else { return nil }
        w.bytes.removeLast(bound - n)
        let sealStart = 1 + Envelope.sealLength
        let seal = w.bytes.withUnsafeBytes { Hashing.sha256(UnsafeRawBufferPointer(rebasing: $0[sealStart...]), prefix: Envelope.sealLength) }
        w.bytes.replaceSubrange(1..<sealStart, with: seal)
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

/// What a compaction's copy stores for each envelope (``EventStore/compactedCopy(into:)``): read
/// plain (a packed one against the store's dictionary, a sealed one opened), packed against the
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
    /// The new `sealed-chain` links, by seq (an encrypted store).
    private var links: [[UInt8]] = []

    init(packer: EnvelopePacker, schema: LogSchema) {
        self.packer = packer
        old = schema.envelopeDictionary
        cipher = schema.cipher
        events = schema.events
        meta = schema.meta
    }

    /// A ``Environment/PackRewrite`` of `events`.
    func envelope(_ key: UnsafeRawBufferPointer, _ stored: UnsafeRawBufferPointer, _ snapshot: Environment.PackSnapshot) throws -> [UInt8]? {
        guard let cipher else { return try repack(stored) }
        let seq = key.count == 8 ? UInt64(bigEndianBytes: key) : 0
        guard seq == UInt64(links.count) + 1 else {
            throw EventStoreError.corrupted("the log is not a run of seqs from 1 at seq \(seq)")
        }
        let opened = try cipher.opened(stored, domain: events.domain, key: key)
        let new = try opened.withUnsafeBytes { try repack($0) }.map { $0.withUnsafeBytes { cipher.sealed($0, domain: events.domain, key: key) } }
        let row = new ?? [UInt8](stored)
        let body = try snapshot.get("bodies", key: key)
        let chunks = try snapshot.storedChunks("bodies", key: key)
        let link = row.withUnsafeBytes { SealedChain.digest(previous: links.last ?? Envelope.zeroHash, envelope: $0, body: body, chunks: chunks) }
        links.append(link)
        return new
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

    private func repack(_ stored: UnsafeRawBufferPointer) throws -> [UInt8]? {
        let plain = try Envelope.plain(stored, dictionary: old)
        return plain.withUnsafeBytes { packer.pack($0) } ?? (stored.first == Envelope.packedMark ? plain : nil)
    }
}
