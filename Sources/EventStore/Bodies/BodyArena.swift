import Foundation
import LMDB
import StrataJSON
import Synchronization

/// The bodies of the events (from, to] of a fold, read and prepared off the writer thread and kept
/// in one block of memory: per event its body, its stored form (its `bodies` row, when that reads
/// on its own), and for a document type its canonical form and that form's 16-byte digest. The
/// writer copies out what a projection asks for.
///
/// One block instead of arrays per body: reading ahead used to build a dictionary of four arrays
/// per event, which the reading thread allocated and the writer freed; a 1 M-event rebuild spent
/// about a tenth of its writer's time freeing them, and the reader as much building them. A body
/// that several events share (stored once in the log) is kept once here too.
///
/// One thread fills an arena; another reads it only once it is handed over whole (a read-ahead's
/// result, a published ``BodyPrep`` part). Offsets are 32-bit: an arena holds at most 2 GiB, and
/// what does not fit is left to be read on demand (the callers' budgets stay far below).
// Unchecked: raw memory filled by one thread and handed over whole before another reads it.
final class BodyArena: @unchecked Sendable {
    struct Slot {
        var body: Int32 = -1, bodyCount: Int32 = 0
        /// The canonical form: the body's own bytes when the body is canonical already.
        var canonical: Int32 = -1, canonicalCount: Int32 = 0
        var digest: Int32 = -1
        var stored: Int32 = -1, storedCount: Int32 = 0
    }

    /// The seqs (from, to] this arena has a slot for.
    let from: UInt64, to: UInt64
    private var slots: [Slot]
    private var base: UnsafeMutableRawPointer?
    private var capacity = 0
    /// Bytes in use.
    private(set) var count = 0
    static let limit = Int(Int32.max)

    private let pool: Pool?

    /// `reserving`: the bytes to allocate at once (the arena grows past them as needed);
    /// `pool`: where the memory comes from and goes back to.
    init(from: UInt64, to: UInt64, reserving bytes: Int = 0, pool: Pool? = nil) {
        precondition(to >= from, "an arena's range runs forward")
        self.from = from
        self.to = to
        self.pool = pool
        slots = Array(repeating: Slot(), count: Int(to - from))
        if let block = pool?.take() {
            base = block.base
            capacity = block.capacity
        }
        if bytes > capacity { grow(to: min(Self.limit, bytes)) }
    }

    deinit {
        guard let base else { return }
        if let pool { pool.give(base, capacity) } else { free(base) }
    }

    /// Memory kept from one arena of a fold for the next: a chunk's arena is about a hundred
    /// megabytes, and fresh pages cost the kernel's zeroing of each (a fifth of reading a chunk
    /// ahead). At most two blocks are kept (the chunk folding and the chunk read ahead); freed with
    /// the pool.
    final class Pool: Sendable {
        /// A block: its address and size. Raw pointers are not Sendable; the pool hands each one
        /// to a single arena at a time.
        private struct Block: @unchecked Sendable {
            var base: UnsafeMutableRawPointer
            var capacity: Int
        }
        private let blocks = Mutex<[Block]>([])

        init() {}

        func take() -> (base: UnsafeMutableRawPointer, capacity: Int)? {
            blocks.withLock { $0.popLast() }.map { ($0.base, $0.capacity) }
        }

        func give(_ base: UnsafeMutableRawPointer, _ capacity: Int) {
            let kept = blocks.withLock { b in
                guard b.count < 2 else { return false }
                b.append(Block(base: base, capacity: capacity))
                return true
            }
            if !kept { free(base) }
        }

        deinit { blocks.withLock { for b in $0 { free(b.base) } } }
    }

    // MARK: Filling (one thread)

    /// Keeps `body` as event `seq`'s; false when `seq` is out of range or the arena is full.
    @discardableResult
    func put(body: UnsafeRawBufferPointer, for seq: UInt64) -> Bool {
        guard let i = index(seq), let at = append(body) else { return false }
        slots[i].body = at
        slots[i].bodyCount = Int32(body.count)
        return true
    }

    /// Keeps `stored` as the stored form of event `seq`'s body (put first).
    func put(stored: UnsafeRawBufferPointer, for seq: UInt64) {
        guard let i = index(seq), slots[i].body >= 0, let at = append(stored) else { return }
        slots[i].stored = at
        slots[i].storedCount = Int32(stored.count)
    }

    /// Event `seq`'s body is event `other`'s (kept already): it shares those bytes, and their
    /// canonical form and digest when worked out.
    func share(_ other: UInt64, with seq: UInt64) {
        guard let i = index(seq), let o = index(other), slots[o].body >= 0 else { return }
        var s = slots[o]
        s.stored = -1
        s.storedCount = 0
        slots[i] = s
    }

    /// Works out the canonical form and digest of event `seq`'s body (put first). Nothing when
    /// the body is not JSON: the projection then canonicalizes it itself and reports why it fails.
    func prepareDocument(_ seq: UInt64) {
        guard let i = index(seq), slots[i].body >= 0, slots[i].canonical < 0 else { return }
        let n = Int(slots[i].bodyCount)
        // Room for the form (never longer than the text) and the digest; taken before the body's
        // address, which a growth moves.
        guard n > 0, let out = room(n + 16) else { return }
        let body = UnsafeRawBufferPointer(start: base! + Int(slots[i].body), count: n)
        guard let written = JSONValue.canonicalize(body, into: UnsafeMutableRawBufferPointer(rebasing: out[..<n])) else { return }
        if written == n, memcmp(out.baseAddress!, body.baseAddress!, n) == 0 {
            slots[i].canonical = slots[i].body
        } else {
            slots[i].canonical = Int32(count)
            count += written
        }
        slots[i].canonicalCount = Int32(written)
        Hashing.sha256(bytes(slots[i].canonical, slots[i].canonicalCount), into: UnsafeMutableRawBufferPointer(start: base! + count, count: 16))
        slots[i].digest = Int32(count)
        count += 16
    }

    // MARK: Reading (once handed over)

    /// The body of event `seq`, if kept here.
    func body(_ seq: UInt64) -> [UInt8]? {
        slot(seq).map { Array(bytes($0.body, $0.bodyCount)) }
    }

    /// The stored form (the `bodies` row) of event `seq`'s body, if kept here.
    func stored(_ seq: UInt64) -> [UInt8]? {
        guard let s = slot(seq), s.stored >= 0 else { return nil }
        return Array(bytes(s.stored, s.storedCount))
    }

    /// Whether `json` is event `seq`'s body; nil when its body is not kept here.
    func matches(_ seq: UInt64, _ json: [UInt8]) -> Bool? {
        slot(seq).map { json.equals(bytes($0.body, $0.bodyCount)) }
    }

    /// The canonical form and digest of event `seq`'s body, if worked out and `json` is that body.
    func document(_ seq: UInt64, matching json: [UInt8]) -> (canonical: [UInt8], digest: [UInt8])? {
        guard let s = slot(seq), s.canonical >= 0, json.equals(bytes(s.body, s.bodyCount)) else { return nil }
        return (Array(bytes(s.canonical, s.canonicalCount)), Array(bytes(s.digest, 16)))
    }

    /// The canonical form and digest of event `seq`'s body, if worked out.
    func document(_ seq: UInt64) -> (canonical: [UInt8], digest: [UInt8])? {
        guard let s = slot(seq), s.canonical >= 0 else { return nil }
        return (Array(bytes(s.canonical, s.canonicalCount)), Array(bytes(s.digest, 16)))
    }

    // MARK: Parts

    private func index(_ seq: UInt64) -> Int? {
        seq > from && seq <= to ? Int(seq - from - 1) : nil
    }

    private func slot(_ seq: UInt64) -> Slot? {
        guard let i = index(seq), slots[i].body >= 0 else { return nil }
        return slots[i]
    }

    private func bytes(_ at: Int32, _ n: Int32) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base! + Int(at), count: Int(n))
    }

    /// Room for `n` more bytes at the end (not yet counted), or nil past the limit.
    private func room(_ n: Int) -> UnsafeMutableRawBufferPointer? {
        guard count + n <= Self.limit else { return nil }
        if count + n > capacity { grow(to: min(Self.limit, max(count + n, capacity * 2, 1 << 16))) }
        return UnsafeMutableRawBufferPointer(start: base! + count, count: n)
    }

    private func append(_ bytes: UnsafeRawBufferPointer) -> Int32? {
        guard let out = room(bytes.count) else { return nil }
        if !bytes.isEmpty { out.copyMemory(from: bytes) }
        let at = count
        count += bytes.count
        return Int32(at)
    }

    private func grow(to n: Int) {
        guard let p = realloc(base, max(n, 1)) else { fatalError("out of memory for a body arena of \(n) bytes") }
        base = p
        capacity = n
    }

}

extension BodyArena {
    /// Reads the bodies of `events` (all in (from, to]): first each event's own `bodies` row (in
    /// seq order, so the pages are read in order), then the bodies stored by earlier events, in
    /// hash order (the index's pages in key order instead of at random), each once. Bodies over
    /// 64 KiB (images) are left to be read on demand, and so is everything past `budget` bytes,
    /// and any body that is missing or damaged (the on-demand read reports it for the event that
    /// needs it). Bodies of `documentTypes` events get their canonical form and digest too.
    /// `pool`: memory of an earlier arena, reused.
    static func read(
        _ events: some Collection<RecordedEvent>, from: UInt64, to: UInt64, documentTypes: Set<String> = [],
        schema: LogSchema, in txn: Transaction, zstd: ZstdContext, budget: Int = 256 << 20, pool: Pool? = nil
    ) throws -> BodyArena {
        var total = 0
        for e in events { if let ref = e.payload, ref.size <= 64 << 10 { total += ref.size } }
        // Bodies, about as much again of canonical forms and stored forms (forms equal to their
        // body are not copied); pages never touched cost nothing.
        let arena = BodyArena(from: from, to: to, reserving: min(total, budget) * 2 + 32 * events.count, pool: pool)
        let bases = DeltaBases(bodies: schema.bodies, txn: txn)
        // The events' own rows, in seq order: a cursor walks the table's pages instead of a search
        // from the root for each.
        let own = try txn.cursor(schema.bodies)
        var elsewhere: [(order: UInt64, hash: [UInt8], seq: UInt64, document: Bool)] = []
        var bytes = 0
        for e in events {
            guard let ref = e.payload, ref.size <= 64 << 10 else { continue }
            bytes += ref.size
            if bytes > budget { break }
            let document = !documentTypes.isEmpty && documentTypes.contains(e.type)
            if let own = try withUnsafeBytes(of: e.seq.bigEndian, { try own.seek(exactly: $0) }) {
                if let body = try? bases.decode(own, seq: e.seq, context: zstd), body.withUnsafeBytes({ arena.put(body: $0, for: e.seq) }) {
                    if BlobCodec.isSelfContained(own) { arena.put(stored: own, for: e.seq) }
                    if document { arena.prepareDocument(e.seq) }
                }
                continue
            }
            // The first 8 bytes order the lookups (the body index sorts by them).
            elsewhere.append((ref.hash.withUnsafeBytes { UInt64(bigEndianBytes: $0) }, ref.hash, e.seq, document))
        }
        elsewhere.sort { $0.order < $1.order }
        var previous: (hash: [UInt8], seq: UInt64)?
        for w in elsewhere {
            if let previous, previous.hash == w.hash {
                arena.share(previous.seq, with: w.seq)
            } else {
                guard let stored = try w.hash.withUnsafeBytes({ try schema.bodyIndex.stored(hash: $0, in: txn) }),
                    let body = try? BlobCodec.decode(stored, context: zstd, bases: bases),
                    body.withUnsafeBytes({ arena.put(body: $0, for: w.seq) })
                else { continue }
                previous = (w.hash, w.seq)
            }
            if w.document { arena.prepareDocument(w.seq) }
        }
        return arena
    }
}
