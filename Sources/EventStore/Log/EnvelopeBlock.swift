import CZstd
import LMDB

/// Blocks of envelopes: how `strata compact` stores runs of the log's envelopes (format 8).
///
/// A packed envelope (``Envelope/packedMark``) still carries the hash of the one before it: 32
/// bytes that do not compress, and with the id, the body's hash and a commit's hash, most of what
/// is left of it. In a run of envelopes that chain, every previous hash but the first is the hash
/// of the envelope before, which a read computes anyway. A block stores such a run as one row,
/// under the seq of its last envelope, compressed together against the store's envelope
/// dictionary (what repeats from one envelope to the next is then a match, not a dictionary
/// entry):
///
/// ```
/// u8 3 | 4-byte seal: the first bytes of SHA-256(what follows) | varint count | varint n (the
/// frame's content size) | zstd frame (magicless, no content size, no dictionary id, no
/// checksum) against meta/envelope-dictionary of:
///     32 bytes: the previous hash of the first envelope
///     count × (varint m | the envelope's first m bytes: all but its previous hash and hash)
/// ```
///
/// A read decompresses the block and rebuilds each envelope: its bytes, the hash before it, and
/// SHA-256 of the two (the chain is the same chain). Rows are keyed by their last seq, so the row
/// holding a seq is the first at or after it: one seek, as for a row per seq. A block fits a leaf
/// page (about 2 KB, 20–40 envelopes of a scraping history); a transaction keeps the last few
/// blocks it decoded (``LMDB/Transaction/derived(_:_:)``), so a walk decodes each block once.
///
/// Since format 11 a compaction lays the envelopes out by column (``EnvelopeColumns``) and marks
/// the row 4 instead of 3; the rest of the row is the same, and blocks of both marks are read.
enum EnvelopeBlock {
    /// A block whose envelopes follow one another (format 8).
    static let mark: UInt8 = 3
    /// A block whose envelopes are laid out by column (format 11, ``EnvelopeColumns``).
    static let columnsMark: UInt8 = 4

    /// Whether a stored `events` row whose first byte is `first` is a block.
    static func isBlock(_ first: UInt8?) -> Bool { first == mark || first == columnsMark }
    /// The most envelopes a block is cut from at once: enough that a block is never short of
    /// envelopes to fill its page, few enough that a failed fit costs little.
    static let window = 128

    /// The envelopes of the block stored under `last` (its plaintext `stored`), decoded once
    /// while the transaction keeps it among its last few (``LMDB/Transaction/derived(_:_:)``):
    /// a walk of a whole log holds one block at a time, not all of them.
    static func decoded(_ stored: UnsafeRawBufferPointer, last: UInt64, dictionary: EnvelopeDictionary?, in txn: Transaction) throws
        -> EnvelopeRun
    {
        try txn.derived(Key(last: last)) { try decode(stored, last: last, dictionary: dictionary) }
    }

    /// The envelopes of a block, copied (a compaction's reader, outside any transaction).
    static func envelopes(_ stored: UnsafeRawBufferPointer, last: UInt64, dictionary: EnvelopeDictionary?) throws -> [[UInt8]] {
        let run = try decode(stored, last: last, dictionary: dictionary)
        return (0..<run.count).map { [UInt8](run[$0]) }
    }

    private struct Key: Hashable { var last: UInt64 }

    /// Visits the plain envelopes of the opened `events` row keyed `seq`, for a check that
    /// reports damage instead of stopping at it: a block's (their hashes computed from its bytes:
    /// damage shows as a seal that does not match, or as a link the next row does not make), or
    /// the row's own envelope (`computed` for a packed one, whose hash is worked out from its
    /// bytes too). A row that does not read visits nothing; `unreadable` gets its problem.
    static func checkRow(
        _ seq: UInt64, _ opened: UnsafeRawBufferPointer, dictionary: EnvelopeDictionary?, in txn: Transaction,
        unreadable: (String) throws -> Void, _ visit: (_ seq: UInt64, _ envelope: UnsafeRawBufferPointer, _ computed: Bool) throws -> Void
    ) rethrows {
        if isBlock(opened.first) {
            guard let run = try? decoded(opened, last: seq, dictionary: dictionary, in: txn) else {
                return try unreadable(
                    "the block of event envelopes ending at seq \(seq) does not match its seal or does not decompress (tampered or damaged)")
            }
            for i in 0..<run.count { try visit(run.first + UInt64(i), run[i], true) }
        } else if let value = try? Envelope.plain(opened, dictionary: dictionary, in: txn) {
            try visit(seq, value, opened.first == Envelope.packedMark)
        } else {
            try unreadable("event \(seq): its packed envelope does not match its seal or does not decompress (tampered or damaged)")
        }
    }

    static func decode(_ stored: UnsafeRawBufferPointer, last: UInt64, dictionary: EnvelopeDictionary?) throws -> EnvelopeRun {
        guard let dictionary else {
            throw EventStoreError.corrupted("a block of event envelopes, and the store has no envelope dictionary")
        }
        do {
            guard isBlock(stored.first), Envelope.sealMatches(stored) else { throw ByteReader.Truncated() }
            var r = ByteReader(UnsafeRawBufferPointer(rebasing: stored[(1 + Envelope.sealLength)...]))
            let count = Int(clamping: try r.varint())
            let n = Int(clamping: try r.varint())
            guard count > 0, count <= 1 << 16, UInt64(count) <= last, n > 32, n <= 1 << 24 else { throw ByteReader.Truncated() }
            let content = UnsafeMutableRawBufferPointer.allocate(byteCount: n, alignment: 1)
            defer { content.deallocate() }
            let frame = UnsafeRawBufferPointer(rebasing: r.buffer[r.offset...])
            try ZstdContext.pooled { try $0.decompress(frame, dictionary: dictionary, into: content) }
            let first = last - UInt64(count) + 1
            let previousHash = UnsafeRawBufferPointer(rebasing: content[0..<32])
            if stored.first == columnsMark {
                let rows = try EnvelopeColumns.decode(UnsafeRawBufferPointer(rebasing: content[32...]), count: count, first: first)
                return try rows.bytes.withUnsafeBytes { try run(of: $0, ranges: rows.ranges, first: first, previousHash: previousHash) }
            }
            // The envelopes' sizes first, for one buffer of all of them.
            var heads = ByteReader(UnsafeRawBufferPointer(rebasing: content[32...]))
            var ranges: [Range<Int>] = []
            ranges.reserveCapacity(count)
            for _ in 0..<count {
                let m = try heads.count(limit: 1 << 20)
                let start = 32 + heads.offset
                _ = try heads.slice(m)
                ranges.append(start..<(start + m))
            }
            guard heads.offset == heads.buffer.count else { throw ByteReader.Truncated() }
            return try run(of: UnsafeRawBufferPointer(content), ranges: ranges, first: first, previousHash: previousHash)
        } catch {
            throw EventStoreError.corrupted(
                "the block of event envelopes ending at seq \(last) does not match its seal or does not decompress (damaged)")
        }
    }

    /// The envelopes whose bytes before their previous hash are `rows[ranges[i]]`, from the seq
    /// `first` on, each with the previous hash (`previousHash`, then each one's computed hash)
    /// and its hash put back.
    private static func run(of rows: UnsafeRawBufferPointer, ranges: [Range<Int>], first: UInt64, previousHash: UnsafeRawBufferPointer) throws
        -> EnvelopeRun
    {
        let run = EnvelopeRun(first: first, size: ranges.reduce(0) { $0 + $1.count + 64 }, count: ranges.count)
        let out = run.storage
        var previous = previousHash
        var at = 0
        for (i, range) in ranges.enumerated() {
            let m = range.count
            let envelope = UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + m + 64)])
            envelope.copyMemory(from: UnsafeRawBufferPointer(rebasing: rows[range]))
            UnsafeMutableRawBufferPointer(rebasing: envelope[m..<(m + 32)]).copyMemory(from: previous)
            let hash = UnsafeMutableRawBufferPointer(rebasing: envelope[(m + 32)...])
            Hashing.sha256(UnsafeRawBufferPointer(rebasing: envelope[0..<(m + 32)]), into: hash)
            // Each envelope names its seq: a block that does not count up to its key is damaged.
            guard m >= 9, envelope[0] == Envelope.format,
                UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: envelope[1..<9])) == first + UInt64(i)
            else { throw ByteReader.Truncated() }
            previous = UnsafeRawBufferPointer(hash)
            at += m + 64
            run.offsets[i + 1] = at
        }
        return run
    }
}

/// The plain envelopes of one block (``EnvelopeBlock``), in memory of its own: an envelope read
/// from it stays valid while the run does (a cursor standing in the block keeps it).
final class EnvelopeRun {
    let first: UInt64
    fileprivate let storage: UnsafeMutableRawBufferPointer
    fileprivate var offsets: [Int]

    fileprivate init(first: UInt64, size: Int, count: Int) {
        self.first = first
        storage = .allocate(byteCount: size, alignment: 1)
        offsets = [Int](repeating: 0, count: count + 1)
    }

    deinit { storage.deallocate() }

    var count: Int { offsets.count - 1 }
    var last: UInt64 { first + UInt64(count) - 1 }

    subscript(i: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[offsets[i]..<offsets[i + 1]]) }

    /// The envelope of `seq`; nil outside the block.
    func envelope(_ seq: UInt64) -> UnsafeRawBufferPointer? {
        guard seq >= first, seq <= last else { return nil }
        return self[Int(seq - first)]
    }
}

extension EnvelopePacker {
    /// A block of the longest prefix of `envelopes` (plain, each of format 1, hashing to its
    /// hash and chaining to the one before: ``blockable(_:)``, ``chains(_:after:)``) whose stored form has at
    /// most `capacity` bytes, with how many it holds; nil when not even two fit. `guess`: how
    /// many fit last time, where the search starts.
    func block(_ envelopes: ArraySlice<[UInt8]>, capacity: Int, guess: Int) -> (bytes: [UInt8], count: Int)? {
        guard envelopes.count >= 2 else { return nil }
        var best: (bytes: [UInt8], count: Int)?
        var fits = 1
        var tooMany = envelopes.count + 1
        var k = min(max(guess, 2), envelopes.count)
        // A few compressions: each guess scales the last by how far its size was from the page.
        for _ in 0..<6 {
            guard let bytes = compressBlock(envelopes.prefix(k)) else { return best }
            if bytes.count <= capacity {
                best = (bytes, k)
                fits = k
                if k == envelopes.count { break }
                k = min(tooMany - 1, max(k + 1, k * capacity / bytes.count))
            } else {
                tooMany = k
                k = max(fits + 1, min(k - 1, k * capacity / bytes.count))
            }
            if k <= fits || k >= tooMany { break }
        }
        return best
    }

    /// Whether `envelope` can go in a block: a plain envelope of format 1 that hashes to its
    /// hash. Anything else stays a row of its own, so a block never hides damage.
    static func blockable(_ envelope: [UInt8]) -> Bool {
        envelope.withUnsafeBytes { e in e.count > 64 + 9 && e.first == Envelope.format && Envelope.selfConsistent(e) }
    }

    /// Whether `envelope` names `previous`'s hash as the one before it, so it can follow it in a
    /// block (which keeps only the first previous hash): a block never mends a broken link.
    static func chains(_ envelope: [UInt8], after previous: [UInt8]) -> Bool {
        envelope.count >= 64 && previous.count > 32
            && envelope[(envelope.count - 64)..<(envelope.count - 32)].elementsEqual(previous[(previous.count - 32)...])
    }

    private func compressBlock(_ envelopes: ArraySlice<[UInt8]>) -> [UInt8]? {
        var content = ByteWriter(capacity: envelopes.reduce(32) { $0 + $1.count })
        let first = envelopes.first!
        content.raw(first[(first.count - 64)..<(first.count - 32)])
        var mark = EnvelopeBlock.mark
        let firstSeq = first.withUnsafeBytes { UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: $0[1..<9])) }
        if byColumn, let columns = EnvelopeColumns.encode(envelopes, first: firstSeq) {
            mark = EnvelopeBlock.columnsMark
            content.raw(columns)
        } else {
            for e in envelopes {
                content.varint(e.count - 64)
                content.raw(e[0..<(e.count - 64)])
            }
        }
        var w = ByteWriter(capacity: content.bytes.count / 2 + 64)
        w.u8(mark)
        w.raw(repeatElement(0, count: Envelope.sealLength))
        w.varint(envelopes.count)
        w.varint(content.bytes.count)
        guard let frame = content.bytes.withUnsafeBytes({ compress($0, block: true) }) else { return nil }
        w.raw(frame)
        Envelope.seal(&w.bytes)
        return w.bytes
    }
}
