import LMDB

/// A walk over the log's envelopes in seq order, either way: the one door to `events` for every
/// reader. A row holds one envelope (plain or packed) under its seq, or a block of them under
/// its last seq (``EnvelopeBlock``); the cursor hands out each envelope plain, with its seq,
/// valid until the cursor moves (a block's envelopes live in its decoded run, which the cursor
/// holds while it stands in the block).
struct EnvelopeCursor {
    typealias Entry = (seq: UInt64, envelope: UnsafeRawBufferPointer)

    private let cursor: Cursor
    private let dictionary: EnvelopeDictionary?
    private let txn: Transaction
    /// The block the cursor stands in, and where.
    private var run: EnvelopeRun?
    private var index = 0

    init(_ schema: LogSchema, _ txn: Transaction) throws {
        try self.init(events: schema.events, dictionary: schema.envelopeDictionary, txn)
    }

    init(events: Database, dictionary: EnvelopeDictionary?, _ txn: Transaction) throws {
        cursor = try txn.cursor(events)
        self.dictionary = dictionary
        self.txn = txn
    }

    /// The plain envelope of `seq` in `events`; nil when the log has none. Use it at once: one
    /// from a block is valid until the transaction has decoded a few more blocks.
    static func envelope(at seq: UInt64, events: Database, dictionary: EnvelopeDictionary?, _ txn: Transaction) throws -> UnsafeRawBufferPointer? {
        // A row per seq unless a compaction made blocks: one get finds it.
        if let v = try withUnsafeBytes(of: seq.bigEndian, { try txn.get(events, key: $0) }) {
            guard EnvelopeBlock.isBlock(v.first) else { return try Envelope.plain(v, dictionary: dictionary, in: txn) }
            return try EnvelopeBlock.decoded(v, last: seq, dictionary: dictionary, in: txn).envelope(seq)
        }
        guard dictionary != nil else { return nil }
        var c = try EnvelopeCursor(events: events, dictionary: dictionary, txn)
        guard let e = try c.seek(atLeast: seq), e.seq == seq else { return nil }
        return e.envelope
    }

    mutating func first() throws -> Entry? { try enter(cursor.first(), at: .first) }
    mutating func last() throws -> Entry? { try enter(cursor.last(), at: .last) }

    /// The first envelope with a seq ≥ `seq`.
    mutating func seek(atLeast seq: UInt64) throws -> Entry? {
        // The row holding `seq` is the first keyed at or after it.
        try enter(cursor.seek(atLeast: seq.bigEndianBytes), at: .seq(seq))
    }

    /// The last envelope with a seq ≤ `seq`.
    mutating func seek(atMost seq: UInt64) throws -> Entry? {
        guard let row = try cursor.seek(atLeast: seq.bigEndianBytes) else { return try last() }
        if let e = try enter(row, at: .seq(seq)), e.seq <= seq { return e }
        return try enter(cursor.previous(), at: .last)
    }

    mutating func next() throws -> Entry? {
        if let run, index + 1 < run.count {
            index += 1
            return (run.first + UInt64(index), run[index])
        }
        return try enter(cursor.next(), at: .first)
    }

    mutating func previous() throws -> Entry? {
        if let run, index > 0 {
            index -= 1
            return (run.first + UInt64(index), run[index])
        }
        return try enter(cursor.previous(), at: .last)
    }

    private enum Place { case first, last, seq(UInt64) }

    private mutating func enter(_ row: Cursor.Entry?, at place: Place) throws -> Entry? {
        guard let row else {
            run = nil
            return nil
        }
        let key = UInt64(bigEndianBytes: row.key)
        guard EnvelopeBlock.isBlock(row.value.first) else {
            run = nil
            return (key, try Envelope.plain(row.value, dictionary: dictionary, in: txn))
        }
        let r = try EnvelopeBlock.decoded(row.value, last: key, dictionary: dictionary, in: txn)
        run = r
        switch place {
        case .first: index = 0
        case .last: index = r.count - 1
        case .seq(let s): index = s < r.first ? 0 : Int(min(s, r.last) - r.first)
        }
        return (r.first + UInt64(index), r[index])
    }
}

extension LogSchema {
    /// The plain envelope of `seq`; nil when the log has none (``EnvelopeCursor/envelope(at:events:dictionary:_:)``).
    func envelope(at seq: UInt64, _ txn: Transaction) throws -> UnsafeRawBufferPointer? {
        try EnvelopeCursor.envelope(at: seq, events: events, dictionary: envelopeDictionary, txn)
    }

    /// The event of `seq`, decoded; nil when the log has none.
    func event(at seq: UInt64, _ txn: Transaction) throws -> RecordedEvent? {
        try envelope(at: seq, txn).map { try Envelope.decode($0) }
    }
}
