import LMDB

/// Finds a stored body by its SHA-256, and claims the place of a new one (format 3).
///
/// `body-index` maps the first ``prefix`` bytes of a body's hash (8 unless the store was created
/// otherwise) to the seq of the event whose `bodies` row holds the body. Its keys are random, so
/// every append dirties pages all over it; a row of 8 + 8 bytes instead of 32 + 9 halves them.
/// The event's envelope carries the whole hash, and every match is confirmed against it.
///
/// `blobs` (whole hash → pointer or body) keeps the rows formats 1 and 2 wrote, and takes the
/// rare body whose prefix another body holds already. It is empty in a store created at format 3
/// until that happens, and a lookup in an empty table touches no page.
struct BodyIndex: Sendable {
    let index: Database
    let blobs: Database
    let bodies: Database
    let events: Database
    /// Bytes of the hash in an index key.
    let prefix: Int
    /// What packed envelopes are compressed against (``Envelope/packedMark``).
    let envelopeDictionary: EnvelopeDictionary?

    /// The seq whose `bodies` row holds the body hashing to `hash`, found through the prefix
    /// index; nil when the prefix is not there or belongs to another body.
    func indexedSeq(_ hash: UnsafeRawBufferPointer, in txn: Transaction) throws -> UInt64? {
        guard let row = try txn.get(index, key: UnsafeRawBufferPointer(rebasing: hash[..<prefix])) else { return nil }
        let seq = try Self.seq(row)
        return try carries(seq, hash, txn) ? seq : nil
    }

    /// The stored form (``BlobCodec``) of the body hashing to `hash`; nil when it is not stored
    /// (or its row is missing). Valid until the transaction writes again.
    func stored(hash: UnsafeRawBufferPointer, in txn: Transaction) throws -> UnsafeRawBufferPointer? {
        if let seq = try indexedSeq(hash, in: txn) { return try BlobCodec.stored(seq: seq, bodies: bodies, in: txn) }
        guard try hasBlobs(txn) else { return nil }
        return try BlobCodec.stored(hash: hash, blobs: blobs, bodies: bodies, in: txn)
    }

    /// Whether the body hashing to `hash` is stored.
    func contains(_ hash: UnsafeRawBufferPointer, in txn: Transaction) throws -> Bool {
        try indexedSeq(hash, in: txn) != nil || inBlobs(hash, txn)
    }

    func contains(_ hash: [UInt8], in txn: Transaction) throws -> Bool {
        try hash.withUnsafeBytes { try contains($0, in: txn) }
    }

    /// Makes `seq` the home of the body hashing to `hash` unless the body is stored already: true
    /// when the event at `seq` must store it. The event's envelope must be written before another
    /// claim of the same prefix in this transaction (its hash confirms the match).
    func claim(_ hash: UnsafeRawBufferPointer, seq: UInt64, in txn: Transaction) throws -> Bool {
        // A row of an older format, or a body whose prefix was taken.
        if try inBlobs(hash, txn) { return false }
        let taken = try seq.withShortBigEndianBytes { value in
            try txn.insert(index, key: UnsafeRawBufferPointer(rebasing: hash[..<prefix]), value: value).map(Self.seq)
        }
        guard let taken else { return true }
        if try carries(taken, hash, txn) { return false }
        // Another body has this prefix: this one is found by its whole hash.
        return try BlobCodec.withPointer(to: seq) { try txn.insert(blobs, key: hash, value: $0) == nil }
    }

    /// Whether `blobs` has a row for `hash`. The table is empty in most stores, and an empty one
    /// is not searched: in an encrypted store a lookup would digest the hash first.
    private func inBlobs(_ hash: UnsafeRawBufferPointer, _ txn: Transaction) throws -> Bool {
        try hasBlobs(txn) && txn.get(blobs, key: hash) != nil
    }

    private func hasBlobs(_ txn: Transaction) throws -> Bool { try txn.stat(blobs).entries > 0 }

    /// Distinct stored bodies.
    func count(in txn: Transaction) throws -> Int {
        try txn.stat(index).entries + txn.stat(blobs).entries
    }

    /// Whether the event at `seq` carries the body hashing to `hash`.
    func carries(_ seq: UInt64, _ hash: UnsafeRawBufferPointer, _ txn: Transaction) throws -> Bool {
        guard let envelope = try EnvelopeCursor.envelope(at: seq, events: events, dictionary: envelopeDictionary, txn) else { return false }
        return Envelope.payloadHash(in: envelope)?.elementsEqual(hash) ?? false
    }

    /// The seq a row holds: big-endian, 1 to 8 bytes (8 in rows written before format 7).
    static func seq(_ row: UnsafeRawBufferPointer) throws -> UInt64 {
        guard (1...8).contains(row.count) else { throw EventStoreError.corrupted("a body-index row of \(row.count) bytes is not a seq") }
        return UInt64(bigEndianBytes: row)
    }

    /// The index key length of stores created without saying otherwise.
    static let defaultPrefix = 8
}
