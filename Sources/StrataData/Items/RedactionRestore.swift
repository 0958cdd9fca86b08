import EventStore
import Foundation
import LMDB
import StrataJSON

/// Re-storing values redacted anew is not a change of the API's data. When a source gains a
/// `redact` path, or the team's redaction key rotates, the next pass stores the same values as
/// new placeholders; the items fold still makes those versions (the current documents must stop
/// holding the values, or the old placeholders), but marks each whose only difference is values
/// turned into placeholders as *re-stored*, with why. The fetch summary counts such versions
/// apart from changes, `history` says what happened, and diffs, feeds and alerts leave those
/// replacements out. Everything here is read from the log's own events, so every node marks the
/// same versions.
///
/// Table `redaction`: source → canonical JSON `{"paths": […], "epoch": seq?, "reason": text?}`:
/// the source's redact paths, and while items wait to be re-stored, the seq of the change (an
/// item whose version is older than it is compared) and what changed. The epoch ends with the
/// first complete pass after it. Table `restored`: `source 0x00 id 0x00 seq(u64be)` → the reason,
/// for each re-stored version.
struct RedactionRestore {
    static let tables = ["redaction", "restored"]

    let source: String
    let epoch: UInt64
    let reason: String
    let context: ProjectionContext

    /// The source's pending re-store, or nil when there is none.
    init?(source: String, _ ctx: ProjectionContext) throws {
        guard let state = try Self.state(source, ctx), case .number(let e)? = state["epoch"], let epoch = UInt64(e),
            case .string(let reason)? = state["reason"]
        else { return nil }
        self.source = source
        self.epoch = epoch
        self.reason = reason
        context = ctx
    }

    private static func state(_ source: String, _ ctx: ProjectionContext) throws -> [String: JSONValue]? {
        guard let raw = try ctx.transaction.get(ctx.tables["redaction"], key: ctx.tables.text(source)), case .object(let o) = try JSONValue(parsing: raw)
        else { return nil }
        return o
    }

    private static func put(_ state: [String: JSONValue], _ source: String, _ ctx: ProjectionContext) throws {
        _ = try ctx.transaction.put(ctx.tables["redaction"], key: ctx.tables.text(source), value: JSONValue.object(state).canonicalBytes)
    }

    /// A definition folded at `seq`: paths added to those the source had start an epoch.
    static func defined(_ definition: JSONValue, source: String, seq: UInt64, _ ctx: ProjectionContext) throws {
        let paths: [String] =
            if case .array(let list)? = definition.value(atPath: "redact") { list.compactMap { if case .string(let p) = $0 { p } else { nil } } } else { [] }
        var state = try Self.state(source, ctx)
        let before: Set<String> =
            if case .array(let list)? = state?["paths"] { Set(list.compactMap { if case .string(let p) = $0 { p } else { nil } }) } else { [] }
        let added = paths.filter { !before.contains($0) }
        if state == nil {
            // A source defined redacting from the start has nothing to re-store.
            state = ["paths": .array(paths.map(JSONValue.string))]
        } else {
            state!["paths"] = .array(paths.map(JSONValue.string))
            if !added.isEmpty {
                state!["epoch"] = .number(String(seq))
                state!["reason"] = .string("with " + added.sorted().joined(separator: ", ") + " redacted")
            }
        }
        try put(state!, source, ctx)
    }

    /// The team's key rotated at `seq`: every source with redact paths re-stores its values.
    static func keyRotated(seq: UInt64, _ ctx: ProjectionContext) throws {
        let db = ctx.tables["redaction"]
        var rows: [([UInt8], [String: JSONValue])] = []
        let c = try ctx.transaction.cursor(db)
        var e = try c.first()
        while let entry = e {
            if case .object(let o) = try JSONValue(parsing: [UInt8](entry.value)), case .array(let paths)? = o["paths"], !paths.isEmpty {
                rows.append(([UInt8](entry.key), o))
            }
            e = try c.next()
        }
        for (key, var state) in rows {
            state["epoch"] = .number(String(seq))
            state["reason"] = .string("under the rotated redaction key")
            _ = try ctx.transaction.put(db, key: key, value: JSONValue.object(state).canonicalBytes)
        }
    }

    /// A complete pass of `source` that started after the epoch saw every item: the epoch ends.
    static func passCompleted(source: String, since: UInt64, _ ctx: ProjectionContext) throws {
        guard var state = try Self.state(source, ctx), case .number(let e)? = state["epoch"], let epoch = UInt64(e), since > epoch else { return }
        state["epoch"] = nil
        state["reason"] = nil
        try put(state, source, ctx)
    }

    /// Marks the versions `items` make at `seq` that only turn values into placeholders, for
    /// items last changed before the epoch.
    func mark(_ items: [(key: String, item: JSONValue)], seq: UInt64) throws {
        let reader = DocumentReader(transaction: context.transaction, tables: context.tables)
        for (key, item) in items {
            guard let current = try reader.state(collection: source, key: key), !current.removed, current.changedSeq < epoch,
                current.document != item
            else { continue }
            let ops = current.document.diff(to: item)
            guard !ops.isEmpty, ops.allSatisfy(Self.isRestore) else { continue }
            _ = try context.transaction.put(context.tables["restored"], key: Self.key(source, key, seq, context.tables), value: Array(reason.utf8))
        }
    }

    /// An operation that turns a value into a placeholder (or one placeholder into another).
    static func isRestore(_ op: PatchOperation) -> Bool {
        guard op.op == .replace, case .string(let s)? = op.value else { return false }
        return CredentialMask.isPlaceholder(s)
    }

    static func key(_ source: String, _ id: String, _ seq: UInt64, _ tables: TableSet) -> [UInt8] {
        prefix(source, id, tables) + seq.bigEndianBytes
    }

    static func prefix(_ source: String, _ id: String, _ tables: TableSet) -> [UInt8] {
        tables.text(source) + [0] + tables.text(id) + [0]
    }

    /// Why the version of `id` at `seq` was re-stored; nil for a version that is not.
    static func reason(source: String, id: String, seq: UInt64, _ reader: DocumentReader) throws -> String? {
        try reader.transaction.get(reader.tables["restored"], key: key(source, id, seq, reader.tables)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether a version of `id` after `from` and at or before `to` was re-stored.
    static func any(source: String, id: String, after from: UInt64, upTo to: UInt64, _ reader: DocumentReader) throws -> Bool {
        guard from < to, try reader.transaction.stat(reader.tables["restored"]).entries > 0 else { return false }
        let p = prefix(source, id, reader.tables)
        guard let e = try reader.transaction.cursor(reader.tables["restored"]).seek(atLeast: p + (from + 1).bigEndianBytes),
            e.key.count == p.count + 8, e.key.starts(with: p)
        else { return false }
        return UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[p.count...])) <= to
    }
}
