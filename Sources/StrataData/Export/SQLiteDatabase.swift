import CSQLite
import Foundation

/// A thin wrapper over the SQLite C library for writing exports: open, execute, prepared
/// statements with bound values. One connection, one thread at a time.
public final class SQLiteDatabase {
    /// A value to bind.
    public enum Value: Sendable, Hashable {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)
    }

    public struct Error: Swift.Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    private var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]

    /// Opens (creating) the database file at `path`.
    public init(path: String) throws {
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw Error(description: "cannot open \(path): \(message)")
        }
    }

    deinit {
        for s in statements.values { sqlite3_finalize(s) }
        sqlite3_close(db)
    }

    /// Runs one or more statements without parameters.
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(db, sql, nil, nil, &message) == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? "error"
            sqlite3_free(message)
            throw Error(description: "\(text) in: \(sql.prefix(200))")
        }
    }

    /// Runs `sql` with `values` bound to its `?` parameters (the statement is prepared once and
    /// kept for the next call with the same text).
    public func run(_ sql: String, _ values: [Value]) throws {
        let statement: OpaquePointer
        if let s = statements[sql] { statement = s } else {
            var s: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &s, nil) == SQLITE_OK, let s else { throw lastError(sql) }
            statements[sql] = s
            statement = s
        }
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (i, v) in values.enumerated() {
            let index = Int32(i + 1)
            switch v {
            case .null: sqlite3_bind_null(statement, index)
            case .integer(let n): sqlite3_bind_int64(statement, index, n)
            case .real(let d): sqlite3_bind_double(statement, index, d)
            case .text(let t): sqlite3_bind_text(statement, index, t, -1, transient)
            }
        }
        guard sqlite3_step(statement) == SQLITE_DONE else { throw lastError(sql) }
    }

    /// A name quoted as an SQL identifier.
    public static func quote(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    private func lastError(_ sql: String) -> Error {
        Error(description: "\(String(cString: sqlite3_errmsg(db))) in: \(sql.prefix(200))")
    }
}
