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

    /// Opens (creating) the database file at `path`; the first one opens libsqlite3 too.
    public init(path: String) throws {
        if let problem = csqlite_load() {
            throw Error(description: "libsqlite3 could not be loaded (\(String(cString: problem))); install it with `apt-get install libsqlite3-0`")
        }
        guard csqlite_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            let message = db.map { String(cString: csqlite_errmsg($0)) } ?? "out of memory"
            csqlite_close(db)
            throw Error(description: "cannot open \(path): \(message)")
        }
    }

    deinit {
        for s in statements.values { csqlite_finalize(s) }
        csqlite_close(db)
    }

    /// Runs one or more statements without parameters.
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        guard csqlite_exec(db, sql, &message) == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? "error"
            csqlite_free(message)
            throw Error(description: "\(text) in: \(sql.prefix(200))")
        }
    }

    /// Runs `sql` with `values` bound to its `?` parameters (the statement is prepared once and
    /// kept for the next call with the same text).
    public func run(_ sql: String, _ values: [Value]) throws {
        let statement: OpaquePointer
        if let s = statements[sql] {
            statement = s
        } else {
            var s: OpaquePointer?
            guard csqlite_prepare_v2(db, sql, -1, &s) == SQLITE_OK, let s else { throw lastError(sql) }
            statements[sql] = s
            statement = s
        }
        csqlite_reset(statement)
        csqlite_clear_bindings(statement)
        for (i, v) in values.enumerated() {
            let index = Int32(i + 1)
            switch v {
            case .null: csqlite_bind_null(statement, index)
            case .integer(let n): csqlite_bind_int64(statement, index, n)
            case .real(let d): csqlite_bind_double(statement, index, d)
            case .text(let t): csqlite_bind_text(statement, index, t, -1)
            }
        }
        guard csqlite_step(statement) == SQLITE_DONE else { throw lastError(sql) }
    }

    /// A name quoted as an SQL identifier.
    public static func quote(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    private func lastError(_ sql: String) -> Error {
        Error(description: "\(String(cString: csqlite_errmsg(db))) in: \(sql.prefix(200))")
    }
}
