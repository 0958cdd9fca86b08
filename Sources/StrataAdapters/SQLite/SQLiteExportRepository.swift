package import StrataDomain
import Foundation
import StrataJSON
import StrataData

/// ``ExportRepository`` writing SQLite files through the data layer's ``SQLiteDatabase``.
///
/// The file is built next to the target and renamed over it when complete, so an existing
/// export is replaced whole or not at all. Schema (documented in docs/cli.md):
/// - `strata_export(key, value)`: source, URL, point, export time, schema version
/// - `items`: one row per item at the point, `_id` and bookkeeping columns, `_detail` (JSON),
///   then a column per top-level field of the list entries (containers as JSON text)
/// - `item_versions`: one row per version of a list entry or a detail (`_origin`), in observed
///   order, with the same field columns (list versions), the whole `_document`, and `_changed`:
///   a JSON array of the top-level fields that changed
/// - `item_changes`: every field-level change of a version (RFC 6902 path, op, old, new)
package struct SQLiteExportRepository: ExportRepository {
    package init() {}

    package func writeSQLite(_ export: SQLiteExport, to path: String) async throws -> SQLiteExportSummary {
        let temp = path + ".partial-\(ProcessInfo.processInfo.processIdentifier)"
        try? FileManager.default.removeItem(atPath: temp)
        do {
            let summary = try write(export, path: temp)
            // rename(2) replaces the target atomically (or creates it).
            guard rename(temp, path) == 0 else {
                throw RepositoryError(.storage, "could not write \(path): \(String(cString: strerror(errno))); check the directory exists and is writable")
            }
            return summary
        } catch {
            try? FileManager.default.removeItem(atPath: temp)
            if error is RepositoryError { throw error }
            throw RepositoryError(.storage, "could not write \(path): \(error)", cause: error)
        }
    }

    /// Column names for the documents' top-level fields: reserved `_` names get one more `_`.
    static func column(_ field: String) -> String { field.hasPrefix("_") ? "_" + field : field }

    static func value(_ json: JSONValue?) -> SQLiteDatabase.Value {
        switch json {
        case nil, .null?: .null
        case .bool(let b)?: .integer(b ? 1 : 0)
        case .number(let n)?: Int64(n).map { .integer($0) } ?? Double(n).map { .real($0) } ?? .text(n)
        case .string(let s)?: .text(s)
        case let v?: .text(v.canonicalString)
        }
    }

    private func write(_ export: SQLiteExport, path: String) throws -> SQLiteExportSummary {
        let db = try SQLiteDatabase(path: path)
        try db.execute("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN")
        var fields: [String] = []
        var known = Set<String>()
        func collect(_ doc: JSONValue) {
            guard case .object(let map) = doc else { return }
            for key in JSONValue.sortedKeys(map) where known.insert(key).inserted { fields.append(key) }
        }
        for item in export.items { collect(item.document) }
        for versions in export.versions.values { for v in versions where v.origin == .list { collect(v.document) } }
        let columns = fields.map { SQLiteDatabase.quote(Self.column($0)) }
        let typed = columns.map { $0 + " ANY" }
        try db.execute(
            """
            CREATE TABLE strata_export (key TEXT PRIMARY KEY, value TEXT);
            CREATE TABLE items (_id TEXT PRIMARY KEY, _title TEXT, _version INTEGER, _removed INTEGER, _first_seq INTEGER,
                _changed_seq INTEGER, _detail TEXT\(typed.map { ", " + $0 }.joined()));
            CREATE TABLE item_versions (_id INTEGER PRIMARY KEY, _item TEXT NOT NULL REFERENCES items(_id), _origin TEXT NOT NULL,
                _version INTEGER NOT NULL, _seq INTEGER NOT NULL, _recorded_at TEXT NOT NULL, _kind TEXT NOT NULL, _backfilled INTEGER NOT NULL,
                _run TEXT, _event_type TEXT, _changed TEXT NOT NULL, _document TEXT\(typed.map { ", " + $0 }.joined()));
            CREATE TABLE item_changes (_version INTEGER NOT NULL REFERENCES item_versions(_id), _item TEXT NOT NULL, path TEXT NOT NULL,
                op TEXT NOT NULL, old TEXT, new TEXT);
            CREATE INDEX item_versions_item ON item_versions(_item, _origin, _version);
            CREATE INDEX item_changes_version ON item_changes(_version);
            """)
        let iso = ISO8601DateFormatter()
        for (k, v) in [
            ("source", export.source.name), ("url", export.source.url), ("point", export.point),
            ("exported_at", iso.string(from: Date())), ("schema_version", "1")
        ] {
            try db.run("INSERT INTO strata_export VALUES (?, ?)", [.text(k), .text(v)])
        }
        let placeholders = String(repeating: ", ?", count: fields.count)
        let insertItem = "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?\(placeholders))"
        for item in export.items {
            let values: [SQLiteDatabase.Value] = [
                .text(item.id), .text(item.title), .integer(Int64(item.version)), .integer(item.isRemoved ? 1 : 0),
                .integer(Int64(item.firstSeq)), .integer(Int64(item.changedSeq)),
                item.detail.map { .text($0.canonicalString) } ?? .null
            ]
            try db.run(insertItem, values + fields.map { Self.value(Self.field(item.document, $0)) })
        }
        let insertVersion = "INSERT INTO item_versions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?\(placeholders))"
        var rowid: Int64 = 0
        var changeCount = 0
        for id in export.items.map(\.id) {
            for v in export.versions[id] ?? [] {
                rowid += 1
                let changed = Array(Set(v.changes.compactMap { Self.topLevel($0.path) })).sorted()
                let changedJSON = JSONValue.array(changed.map { .string($0) }).canonicalString
                let head: [SQLiteDatabase.Value] = [
                    .integer(rowid), .text(id), .text(v.origin.rawValue), .integer(Int64(v.version)), .integer(Int64(v.seq)),
                    .text(iso.string(from: v.recordedAt)), .text(v.kind.rawValue), .integer(v.backfilled ? 1 : 0),
                    v.run.map { .text($0) } ?? .null, v.eventType.map { .text($0) } ?? .null,
                    .text(changedJSON), .text(v.document.canonicalString)
                ]
                let cols = fields.map { v.origin == .list ? Self.value(Self.field(v.document, $0)) : .null }
                try db.run(insertVersion, head + cols)
                for c in v.changes {
                    try db.run(
                        "INSERT INTO item_changes VALUES (?, ?, ?, ?, ?, ?)",
                        [
                            .integer(rowid), .text(id), .text(c.path), .text(c.kind.rawValue),
                            c.old.map { .text($0.canonicalString) } ?? .null, c.new.map { .text($0.canonicalString) } ?? .null
                        ])
                    changeCount += 1
                }
            }
        }
        try db.execute("COMMIT")
        return SQLiteExportSummary(items: export.items.count, versions: Int(rowid), changes: changeCount, columns: fields.count)
    }

    static func field(_ doc: JSONValue, _ key: String) -> JSONValue? {
        if case .object(let map) = doc { map[key] } else { nil }
    }

    /// The top-level field a JSON Pointer starts with.
    static func topLevel(_ pointer: String) -> String? {
        let parts = pointer.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].isEmpty else { return nil }
        return parts[1].replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
    }
}
