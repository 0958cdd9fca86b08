import LMDB
import Synchronization

/// Bytes of a body the log stores: where a version of a list item lives when its page's body
/// holds it. A solid row of the item history keeps such a version (but its key's last) as this
/// reference instead of a copy (``KeyedDocumentProjection/DocumentSource/slice(_:size:)``): a scraping history's page
/// bodies hold every version of every item already, and the history held them all again (1.98 MB
/// of the `items` workload's 4.78 MB store; docs/benchmarks.md).
///
/// The reference is a function of the log alone, so two stores holding the same log hold the
/// same rows: the body's row is the one the log keeps it in (the event's own, or the first
/// event's that carried the same body), and the range is where the item is in that body's
/// *form* (``form(of:)``), as the fold found it. An erasure or a retention rewrites bodies and
/// folds every projection again.
package struct PayloadSlice: Equatable {
    /// The seq of the log's `bodies` row holding the body.
    var row: UInt64
    /// Where the document's text is in the body.
    var range: Range<Int>

    /// The first byte of the blob after a version's record when it names the slice the version is
    /// kept as once a solid row holds it: the changes stores kept there before documents 7 are a
    /// JSON array.
    static let mark: UInt8 = 0

    /// Pages smaller than this keep copies of their items' versions: reading a slice decodes the
    /// whole body, and on small pages the copy costs little.
    package static let minimumBody = 32 << 10

    /// What a slice's range is a range of: the body without its pretty-printing (``JSONLayout``),
    /// which is what the log stores and decodes a chain through (codec 5), so a read skips laying
    /// the body out again (a quarter of reading a version of the `items` workload, and most of
    /// the rest copies); nil when that is the body itself.
    package static func form(of body: [UInt8]) -> [UInt8]? { JSONLayout.minified(body)?.form }

    init(row: UInt64, range: Range<Int>) {
        self.row = row
        self.range = range
    }

    /// Reads `varint back, varint lower, varint count`, of a version at `seq` (its row is at
    /// `seq − back`).
    init(reading r: inout ByteReader, seq: UInt64) throws {
        let back = try r.varint()
        let lower = try r.varint()
        let count = try r.varint()
        guard back < seq, lower <= 1 << 40, count > 0, count <= 1 << 30 else { throw ByteReader.Truncated() }
        row = seq - back
        range = Int(lower)..<Int(lower + count)
    }

    /// `varint back, varint lower, varint count` for a version at `seq`.
    func write(seq: UInt64, _ emit: (UInt8) -> Void) {
        ByteWriter.varint(seq - row, emit)
        ByteWriter.varint(UInt64(range.lowerBound), emit)
        ByteWriter.varint(UInt64(range.count), emit)
    }

    /// The blob a version's record carries after its document (the record's changes blob):
    /// ``mark``, the slice and the document's size.
    func blob(seq: UInt64, size: Int) -> [UInt8] {
        var content: [UInt8] = [Self.mark]
        write(seq: seq) { content.append($0) }
        ByteWriter.varint(UInt64(size)) { content.append($0) }
        var out: [UInt8] = []
        ByteWriter.varint(UInt64(content.count)) { out.append($0) }
        return out + content
    }

    /// The slice and size a record's blob names (``blob(seq:size:)``), or nil when it names none.
    static func named(byBlob content: UnsafeRawBufferPointer, seq: UInt64) -> (slice: PayloadSlice, size: Int)? {
        guard content.first == mark else { return nil }
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: content[1...]))
        guard let slice = try? PayloadSlice(reading: &r, seq: seq), let size = try? r.varint(), size > 0, r.isAtEnd else { return nil }
        return (slice, Int(size))
    }

    /// The document: the slice's bytes canonicalized, `size` bytes of text.
    func text(size: Int, _ txn: Transaction, _ tables: TableSet) throws -> [UInt8] {
        guard let bodies = tables.logBodies, let shared = tables.sliceForms else { throw Self.missing(row) }
        let reader = try txn.derived(Reader.key) { Reader(DeltaBases(bodies: bodies, txn: txn, keepsCheckpoints: true), shared) }
        return try text(in: reader.form(row), size: size)
    }

    /// What a transaction reads bodies for slices with: the log's bases, kept from one body to
    /// the next (a walk in log order decodes each page from the one before it), and the store's
    /// forms (``SharedForms``).
    final class Reader {
        static let key = "payload-slice-reader"
        let bases: DeltaBases
        let shared: SharedForms

        init(_ bases: DeltaBases, _ shared: SharedForms) {
            self.bases = bases
            self.shared = shared
        }

        func form(_ row: UInt64) throws -> [UInt8] {
            guard let stored = try BlobCodec.stored(seq: row, bodies: bases.bodies, in: bases.txn) else { throw missing(row) }
            let fingerprint = try SharedForms.fingerprint(stored)
            if let known = shared.form(row, fingerprint) { return known }
            let form = try ZstdContext.pooled { try BlobCodec.decodeForm(stored, context: $0, bases: bases) }
            shared.keep(form, row, fingerprint)
            return form
        }
    }

    /// The forms of the bodies read for slices, kept across the transactions of one open store
    /// (up to ``limit`` bytes, the latest): a walk in log order (`changes`, a diff) reads each
    /// version and the one before it, the versions of one page from one decoding and the one
    /// before from a page a few dozen back, read earlier in the walk; the web UI's pages of an
    /// item's versions or of the latest changes read the same pages again from one request to
    /// the next. Each is kept under its row and the row's fingerprint (its seal, which covers the
    /// row's bytes): an erasure writes a rewritten row, and every row decoded through it, again,
    /// so a form kept from before it is never found.
    package final class SharedForms: Sendable {
        struct Key: Hashable {
            var row: UInt64
            var fingerprint: [UInt8]
        }

        static let limit = 64 << 20
        private let kept = Mutex(ByteBudget<Key, [UInt8]>(budget: limit))

        package init() {}

        func form(_ row: UInt64, _ fingerprint: [UInt8]) -> [UInt8]? {
            kept.withLock { $0[Key(row: row, fingerprint: fingerprint)] }
        }

        func keep(_ form: [UInt8], _ row: UInt64, _ fingerprint: [UInt8]) {
            kept.withLock { $0.keep(form, for: Key(row: row, fingerprint: fingerprint), bytes: form.count) }
        }

        /// What tells a row's content: the seal of a sealed row (codec 2, 4 or 6, or one of them
        /// inside codec 5), with its codec; the SHA-256 of any other.
        static func fingerprint(_ stored: UnsafeRawBufferPointer) throws -> [UInt8] {
            let inner = try BlobCodec.inner(stored)
            guard let codec = inner.first, [BlobCodec.sealedZstd, BlobCodec.delta, BlobCodec.window].contains(codec) else {
                return Hashing.sha256(Array(stored))
            }
            var r = ByteReader(inner)
            _ = try r.u8()
            _ = try r.varint()
            return [stored.first!, codec] + (try r.bytes(BlobCodec.sealSize))
        }
    }

    private static func missing(_ row: UInt64) -> EventStoreError {
        EventStoreError.corrupted("the body in row \(row) of the log, which holds a version, is missing")
    }

    /// The document, given the form of the body of its row.
    func text(in body: [UInt8], size: Int) throws -> [UInt8] {
        guard range.upperBound <= body.count,
            let text = try? body.withUnsafeBytes({ try JSONValue.canonicalize(UnsafeRawBufferPointer(rebasing: $0[range])) }),
            text.count == size
        else {
            throw EventStoreError.corrupted("a version kept in the body in row \(row) of the log does not read back")
        }
        return text
    }
}
