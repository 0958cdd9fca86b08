import Foundation
import LMDB

/// The hash chain over what an encrypted store holds (`sealed-chain`): for each seq, SHA-256 of
/// the link before it (32 zero bytes before seq 1), then the event's stored `events` row, its
/// stored `bodies` row (if it stored a body) and that row's chunks in `bodies.chunks` (a large
/// body's, since format 7), each as `u64be length, bytes`, exactly as sealed.
/// The envelopes' own chain is inside the seals; this one lets `verify --chain-only` check an
/// encrypted store's log without its key.
enum SealedChain {
    static func link(_ seq: UInt64, chain: Database, _ schema: LogSchema, _ txn: Transaction) throws {
        try put(seq, chain: chain, schema, txn, flags: .append)
    }

    /// The link before `seq` (32 zero bytes before seq 1).
    private static func previous(_ seq: UInt64, chain: Database, _ txn: Transaction) throws -> [UInt8] {
        guard seq > 1 else { return Envelope.zeroHash }
        let p = try withUnsafeBytes(of: (seq - 1).bigEndian) { try txn.getRaw(chain, key: $0).map { [UInt8]($0) } }
        guard let p, p.count == 32 else { throw EventStoreError.corrupted("the sealed chain has no link for seq \(seq - 1)") }
        return p
    }

    /// Computes the link of `seq` over its stored rows as they are and stores it.
    private static func put(_ seq: UInt64, chain: Database, _ schema: LogSchema, _ txn: Transaction, flags: Transaction.PutFlags) throws {
        let previous = try previous(seq, chain: chain, txn)
        try withUnsafeBytes(of: seq.bigEndian) { key in
            let digest = try Self.digest(
                previous: previous, envelope: txn.getRaw(schema.events, key: key), body: txn.getRaw(schema.bodies, key: key),
                chunks: txn.storedChunks(schema.bodies, storedKey: key))
            _ = try digest.withUnsafeBytes { try txn.putRaw(chain, key: key, value: $0, flags: flags) }
        }
    }

    /// Computes the link of `seq` again over its stored rows as they are now (a body rewritten
    /// in place), replacing the one there; the links after it must be computed again too.
    static func relink(_ seq: UInt64, chain: Database, _ schema: LogSchema, _ txn: Transaction) throws {
        try put(seq, chain: chain, schema, txn, flags: [])
    }

    static func digest(previous: [UInt8], envelope: UnsafeRawBufferPointer?, body: UnsafeRawBufferPointer?, chunks: [UnsafeRawBufferPointer]) -> [UInt8] {
        var hasher = Hashing.SHA256Parts()
        previous.withUnsafeBytes { hasher.update($0) }
        if let envelope { hasher.updateLengthPrefixed(envelope) }
        if let body { hasher.updateLengthPrefixed(body) }
        for chunk in chunks { hasher.updateLengthPrefixed(chunk) }
        return hasher.finish()
    }
}

extension SealedChain {
    /// Walks the seqs of `events` in order checking each link of `chain` against the stored rows;
    /// counts events (and stored bodies) into `report`, with its head. A row is keyed by its
    /// last seq (a block holds the ones before it since the previous row: ``EnvelopeBlock``), so
    /// the seqs it covers are known without opening it; the link of a seq inside a block covers
    /// no envelope row, and a missing row shows as links that do not match.
    static func check(events: Database, bodies: Database, chain: Database, _ txn: Transaction, _ report: inout VerifyReport) throws {
        var previous = Envelope.zeroHash
        var expected: UInt64 = 1
        var checked: UInt64 = 0
        let c = try txn.cursor(events, raw: true)
        var entry = try c.first()
        while let e = entry {
            let last = e.key.count == 8 ? UInt64(bigEndianBytes: e.key) : 0
            if last < expected { report.problem("seq gap: expected \(expected), found \(last)") }
            for seq in expected...max(expected, last) {
                try withUnsafeBytes(of: seq.bigEndian) { key in
                    let body = try txn.getRaw(bodies, key: key)
                    let link = digest(
                        previous: previous, envelope: seq == last ? e.value : nil, body: body, chunks: try txn.storedChunks(bodies, storedKey: key))
                    let stored = try txn.getRaw(chain, key: key).map { [UInt8]($0) }
                    if stored != link { report.problem("event \(seq): the sealed chain does not match its stored rows (tampered, damaged or reordered)") }
                    previous = stored ?? link
                    checked += 1
                    if body != nil { report.blobsChecked += 1 }
                }
            }
            expected = max(expected, last) + 1
            entry = try c.next()
        }
        let links = try txn.stat(chain).entries
        if links != Int(checked) { report.problem("the sealed chain has \(links) links for \(checked) events") }
        report.eventsChecked = max(report.eventsChecked, checked)
        report.headSeq = expected - 1
    }
}

extension EventStore {
    /// Checks the log's hash chain in `directory` without opening the store: no key, no
    /// projection catch-up, nothing written. In a store without encryption, every envelope's
    /// hash and its link to the one before; in an encrypted store, the chain over the stored
    /// (sealed) rows, which needs no key. Bodies, indexes and projections are not checked. Meant
    /// for a process that does not hold the store open (LMDB's advice against opening one
    /// environment twice in a process; the tests do, and nothing else opens their stores).
    /// - Throws: ``EventStoreError`` when the directory holds no store.
    public static func verifyChain(at directory: String) throws -> VerifyReport {
        var options = EnvironmentOptions()
        options.readOnly = true
        let env: Environment
        do { env = try Environment(path: directory, options: options) } catch {
            throw EventStoreError.wrap(error, "could not open the store at \(directory)")
        }
        do {
            return try env.read { txn in
                let meta = try env.openDatabase("meta", in: txn, create: false)
                let events = try env.openDatabase("events", in: txn, create: false)
                var report = VerifyReport()
                var previous = Envelope.zeroHash
                var expected: UInt64 = 1
                if try txn.get(meta, key: EncryptionRecord.key) != nil {
                    let bodies = try env.openDatabase("bodies", in: txn, create: false, chunked: true)
                    let chain = try env.openDatabase("sealed-chain", in: txn, create: false)
                    try SealedChain.check(events: events, bodies: bodies, chain: chain, txn, &report)
                    return report
                } else {
                    let stored = try txn.get(meta, key: EnvelopeDictionary.metaKey)
                    let dictionary = stored.flatMap { EnvelopeDictionary(stored: $0) }
                    if stored != nil && dictionary == nil {
                        report.problem("the envelope dictionary does not match its digest (damaged): packed envelopes cannot be read")
                    }
                    // One event (nil: its row does not read); `computed`: its hash was computed
                    // from its bytes (a packed envelope's or a block's).
                    func check(_ seq: UInt64, _ value: UnsafeRawBufferPointer?, computed: Bool) {
                        defer {
                            report.eventsChecked += 1
                            expected = seq + 1
                        }
                        if seq != expected, value != nil { report.problem("seq gap: expected \(expected), found \(seq)") }
                        guard let value else { return }
                        if !computed && !Envelope.selfConsistent(value) {
                            report.problem("event \(seq): stored bytes do not match their hash (tampered or damaged)")
                        } else if let event = try? Envelope.decode(value), event.previousHash != previous {
                            report.problem("event \(seq): hash chain broken (previous hash does not match event \(seq - 1))")
                        }
                        previous = value.count >= 32 ? [UInt8](value[(value.count - 32)...]) : Envelope.zeroHash
                    }
                    let c = try txn.cursor(events)
                    var entry = try c.first()
                    while let row = entry {
                        let seq = row.key.count == 8 ? UInt64(bigEndianBytes: row.key) : 0
                        EnvelopeBlock.checkRow(
                            seq, row.value, dictionary: dictionary, in: txn,
                            unreadable: { problem in
                                report.problem(problem)
                                check(seq, nil, computed: true)
                            }
                        ) { check($0, $1, computed: $2) }
                        entry = try c.next()
                    }
                }
                report.headSeq = expected - 1
                return report
            }
        } catch {
            throw EventStoreError.wrap(error, "could not read the store at \(directory)")
        }
    }
}
