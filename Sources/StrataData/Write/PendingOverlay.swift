public import EventStore
public import LMDB

/// Whether an item shows writes the server has not confirmed.
public enum PendingMark: UInt8, Sendable, Hashable {
    /// Every local write on it is settled (or there never was one).
    case none = 0
    /// Local writes are waiting in the outbox.
    case pending = 1
    /// A local write conflicts with the server's version.
    case conflicted = 2
}

/// The items projection's overlay of local writes on fetched state. For every item with open
/// writes it keeps, in table `pending` (`source 0 key` → canonical JSON), the last server
/// document it knows (`server`, null when the server has none) and the open writes in order;
/// the item's document in the projection is always `server` with the writes applied, so every
/// read (pages, counts, indexes, as-of, history) sees local writes at once. A fetched page
/// replaces `server` and reapplies the writes; an answer from the server settles a write.
///
/// `pending-history` (`source 0 key 0 seq(u64be)` → one ``PendingMark`` byte) records every
/// change of an item's mark, so "was it pending at seq S" is one seek. `etags`
/// (`source 0 key` → text) keeps the ETag the server gave with its last answer to a write.
struct PendingOverlay {
    static let tables = ["pending", "pending-history", "etags"]

    struct Write {
        var seq: UInt64
        var kind: WriteKind
        var ops: [PatchOperation]
        var document: JSONValue?
        var conflicted: Bool

        var json: JSONValue {
            var o: [String: JSONValue] = ["seq": .number(String(seq)), "kind": .string(kind.rawValue)]
            if !ops.isEmpty { o["ops"] = .array(ops.map(\.json)) }
            if let document { o["document"] = document }
            if conflicted { o["conflicted"] = .bool(true) }
            return .object(o)
        }

        init(seq: UInt64, kind: WriteKind, ops: [PatchOperation], document: JSONValue?, conflicted: Bool = false) {
            self.seq = seq; self.kind = kind; self.ops = ops; self.document = document; self.conflicted = conflicted
        }

        init(json: JSONValue) throws {
            guard case .number(let s)? = json.value(atPath: "seq"), let seq = UInt64(s),
                case .string(let k)? = json.value(atPath: "kind"), let kind = WriteKind(rawValue: k)
            else {
                throw DocumentError("a pending write without seq or kind")
            }
            var ops: [PatchOperation] = []
            if case .array(let a)? = json.value(atPath: "ops") { ops = try a.map(PatchOperation.init(json:)) }
            self.init(
                seq: seq, kind: kind, ops: ops, document: json.value(atPath: "document"),
                conflicted: json.value(atPath: "conflicted") == .bool(true))
        }
    }

    struct Entry {
        var server: JSONValue?
        var writes: [Write]

        /// The server's document with the open writes applied; nil when that is no document
        /// (deleted locally, or created here and not yet confirmed and then deleted).
        var overlay: JSONValue? {
            var doc = server
            for w in writes {
                switch w.kind {
                case .create: doc = w.document
                case .patch: if let d = doc { doc = (try? d.applying(w.ops)) ?? d }
                case .delete: doc = nil
                }
            }
            return doc
        }

        var mark: PendingMark { writes.isEmpty ? .none : writes.contains(where: \.conflicted) ? .conflicted : .pending }

        var json: JSONValue { .object(["server": server ?? .null, "writes": .array(writes.map(\.json))]) }

        init(server: JSONValue?, writes: [Write] = []) { self.server = server; self.writes = writes }

        init(json: JSONValue) throws {
            let s = json.value(atPath: "server")
            server = s == .null ? nil : s
            guard case .array(let a)? = json.value(atPath: "writes") else { throw DocumentError("a pending entry without writes") }
            writes = try a.map(Write.init(json:))
        }
    }

    let context: ProjectionContext
    let source: String

    private var txn: Transaction { context.transaction }

    /// `source 0x00 key`; the key is its digest in an encrypted store (``TableSet/text(_:)``).
    private func key(_ key: String) -> [UInt8] { Array(source.utf8) + [0] + context.tables.text(key) }

    /// Whether the source has any item with open writes (one seek): pages of a source without
    /// any skip every other lookup.
    func isEmpty() throws -> Bool {
        let prefix = Array(source.utf8) + [0]
        let c = try txn.cursor(context.tables["pending"])
        guard let e = try c.seek(atLeast: prefix) else { return true }
        return !e.key.hasPrefix(prefix)
    }

    func entry(_ key: String) throws -> Entry? {
        guard let raw = try txn.get(context.tables["pending"], key: self.key(key)) else { return nil }
        return try Entry(json: JSONValue(parsing: raw))
    }

    /// Every item with open writes, by key.
    func entries() throws -> [(key: String, entry: Entry)] {
        let prefix = Array(source.utf8) + [0]
        let c = try txn.cursor(context.tables["pending"])
        var out: [(String, Entry)] = []
        var e = try c.seek(atLeast: prefix)
        while let x = e, x.key.hasPrefix(prefix) {
            out.append(
                (try context.tables.reveal(UnsafeRawBufferPointer(rebasing: x.key[prefix.count...]), in: txn), try Entry(json: JSONValue(parsing: x.value))))
            e = try c.next()
        }
        return out
    }

    /// Stores the entry (removing it once no write is open) and records a change of its mark.
    func save(_ key: String, _ entry: Entry, previous: PendingMark, seq: UInt64) throws {
        if entry.writes.isEmpty {
            _ = try txn.delete(context.tables["pending"], key: self.key(key))
        } else {
            _ = try context.tables.text(key, remembering: txn)
            _ = try txn.put(context.tables["pending"], key: self.key(key), value: entry.json.canonicalBytes)
        }
        if entry.mark != previous {
            _ = try txn.put(context.tables["pending-history"], key: self.key(key) + [0] + seq.bigEndianBytes, value: [entry.mark.rawValue])
        }
    }

    func setETag(_ key: String, _ etag: String?) throws {
        if let etag {
            _ = try txn.put(context.tables["etags"], key: self.key(key), value: Array(etag.utf8))
        } else {
            _ = try txn.delete(context.tables["etags"], key: self.key(key))
        }
    }

    /// The document operation that shows `entry` for `key`.
    static func show(_ source: String, _ key: String, _ entry: Entry) -> DocumentOperation {
        if let doc = entry.overlay { return .put(collection: source, key: key, document: doc) }
        return .remove(collection: source, key: key)
    }

    // MARK: Folding

    /// A fetched item: the server's document now; the open writes are applied on top.
    func serverPut(_ key: String, _ document: JSONValue) throws -> DocumentOperation? {
        guard var entry = try entry(key) else { return nil }
        entry.server = document
        try save(key, entry, previous: entry.mark, seq: 0)
        return Self.show(source, key, entry)
    }

    /// The end of a complete pass from seq `since`: items created here stay (they are marked
    /// seen, so the sweep spares them); items the server no longer lists lose their server
    /// document (a pending patch on them then shows nothing).
    func completePass(since: UInt64, reader: DocumentReader) throws -> [DocumentOperation] {
        var ops: [DocumentOperation] = []
        for (key, var entry) in try entries() {
            if entry.server != nil, let s = try reader.summary(collection: source, key: key), s.lastSeenSeq < since {
                entry.server = nil
                try save(key, entry, previous: entry.mark, seq: 0)
            }
            if let doc = entry.overlay { ops.append(.put(collection: source, key: key, document: doc)) }
        }
        return ops
    }

    /// A new local write on `key`, whose current document (before it) is `current`.
    func append(_ write: Write, key: String, current: JSONValue?, seq: UInt64) throws -> DocumentOperation {
        var entry = try entry(key) ?? Entry(server: current)
        let previous = entry.mark
        entry.writes.append(write)
        try save(key, entry, previous: previous, seq: seq)
        return Self.show(source, key, entry)
    }

    /// The server accepted write `seq`: it becomes part of the server's document. A created item
    /// the server named `serverId` moves there (with any later writes on it).
    func acknowledged(_ key: String, write seq: UInt64, answer: JSONValue?, serverId: String?, etag: String?, at eventSeq: UInt64) throws -> [DocumentOperation]
    {
        guard var entry = try entry(key), let i = entry.writes.firstIndex(where: { $0.seq == seq }) else {
            try setETag(serverId ?? key, etag)
            return []
        }
        let previous = entry.mark
        let w = entry.writes.remove(at: i)
        switch w.kind {
        case .create: entry.server = w.document
        case .patch:
            if case .object? = answer { entry.server = answer } else if let s = entry.server { entry.server = (try? s.applying(w.ops)) ?? s }
        case .delete: entry.server = nil
        }
        guard let serverId, serverId != key, w.kind == .create else {
            try save(key, entry, previous: previous, seq: eventSeq)
            try setETag(key, w.kind == .delete ? nil : etag)
            return [Self.show(source, key, entry)]
        }
        // The local id gives way to the server's.
        try save(key, Entry(server: nil), previous: previous, seq: eventSeq)
        try save(serverId, entry, previous: .none, seq: eventSeq)
        try setETag(serverId, etag)
        return [.remove(collection: source, key: key), Self.show(source, serverId, entry)]
    }

    /// Write `seq` is out of the overlay (rejected or dropped): the item shows the rest.
    func withdrawn(_ key: String, write seq: UInt64, at eventSeq: UInt64) throws -> [DocumentOperation] {
        guard var entry = try entry(key), let i = entry.writes.firstIndex(where: { $0.seq == seq }) else { return [] }
        let previous = entry.mark
        entry.writes.remove(at: i)
        try save(key, entry, previous: previous, seq: eventSeq)
        return [Self.show(source, key, entry)]
    }

    /// Write `seq` conflicts with `server`, the server's version now: both are kept; the item
    /// shows the local write over the server's version.
    func conflicted(_ key: String, write seq: UInt64, server: JSONValue?, at eventSeq: UInt64) throws -> [DocumentOperation] {
        guard var entry = try entry(key), let i = entry.writes.firstIndex(where: { $0.seq == seq }) else { return [] }
        let previous = entry.mark
        entry.writes[i].conflicted = true
        if let server { entry.server = server }
        try save(key, entry, previous: previous, seq: eventSeq)
        return [Self.show(source, key, entry)]
    }

    /// Write `seq` goes back in the outbox: a conflicted one is pending again; a rejected or
    /// dropped one is overlaid again, in its place by seq.
    func retried(_ key: String, _ write: Write, at eventSeq: UInt64, current: JSONValue?) throws -> [DocumentOperation] {
        var entry = try entry(key) ?? Entry(server: current)
        let previous = entry.mark
        if let i = entry.writes.firstIndex(where: { $0.seq == write.seq }) {
            entry.writes[i].conflicted = false
        } else {
            entry.writes.append(write)
            entry.writes.sort { $0.seq < $1.seq }
        }
        try save(key, entry, previous: previous, seq: eventSeq)
        return [Self.show(source, key, entry)]
    }
}

/// Reads of the overlay's tables (inside a read transaction of the `items` projection).
public struct PendingReader {
    let transaction: Transaction
    let tables: TableSet

    public init(transaction: Transaction, tables: TableSet) {
        self.transaction = transaction
        self.tables = tables
    }

    /// The item's mark now, or as of a seq (one seek).
    public func mark(source: String, key: String, asOf seq: UInt64? = nil) throws -> PendingMark {
        let prefix = Array(source.utf8) + [0] + tables.text(key) + [0]
        let c = try transaction.cursor(tables["pending-history"])
        guard let e = try c.seek(atMost: prefix + (seq ?? .max).bigEndianBytes), e.key.hasPrefix(prefix), e.key.count == prefix.count + 8,
            let b = e.value.first
        else { return .none }
        return PendingMark(rawValue: b) ?? .none
    }

    /// The ETag of the server's last answer to a write on the item.
    public func etag(source: String, key: String) throws -> String? {
        try transaction.get(tables["etags"], key: Array(source.utf8) + [0] + tables.text(key)).map { String(decoding: $0, as: UTF8.self) }
    }
}
