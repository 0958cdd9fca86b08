import CLMDB
import Glibc

/// The one error the storage layer throws. Raw LMDB return codes never leave this module:
/// they are mapped to a ``Code`` and a message that says what went wrong and what to do.
public struct StorageError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What kind of failure this is. A struct over a private enum, so cases can be added later.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: Hashable, Sendable {
            case mapFull, mapResized, notFound, keyExists, corrupted, readersFull, txnFull,
                badValueSize, versionMismatch, invalidArgument, io, diskFull, permissionDenied,
                busy, incompatible, other
        }
        fileprivate let base: Base
        public static let mapFull = Code(base: .mapFull)
        public static let mapResized = Code(base: .mapResized)
        public static let notFound = Code(base: .notFound)
        public static let keyExists = Code(base: .keyExists)
        public static let corrupted = Code(base: .corrupted)
        public static let readersFull = Code(base: .readersFull)
        public static let transactionFull = Code(base: .txnFull)
        public static let badValueSize = Code(base: .badValueSize)
        public static let versionMismatch = Code(base: .versionMismatch)
        public static let invalidArgument = Code(base: .invalidArgument)
        public static let io = Code(base: .io)
        public static let diskFull = Code(base: .diskFull)
        public static let permissionDenied = Code(base: .permissionDenied)
        public static let busy = Code(base: .busy)
        public static let incompatible = Code(base: .incompatible)
        public static let other = Code(base: .other)
        public var description: String { "\(base)" }
    }

    public var code: Code
    public var message: String
    /// The operation that failed, for example `mdb_put(events)`; never a payload.
    public var operation: String

    public init(code: Code, message: String, operation: String = "") {
        self.code = code
        self.message = message
        self.operation = operation
    }

    public var description: String {
        operation.isEmpty ? message : "\(message) (during \(operation))"
    }

    /// Maps an LMDB or errno return code to a storage error with a remedy.
    static func lmdb(_ rc: Int32, _ operation: String) -> StorageError {
        let code: Code
        let message: String
        switch rc {
        case MDB_MAP_FULL:
            code = .mapFull
            message = "the store's map is full; it is grown automatically, so retry, or free disk space"
        case MDB_MAP_RESIZED:
            code = .mapResized
            message = "another process grew the store's map; retry the operation"
        case MDB_NOTFOUND:
            code = .notFound; message = "no such key"
        case MDB_KEYEXIST:
            code = .keyExists; message = "the key already exists"
        case MDB_CORRUPTED, MDB_PAGE_NOTFOUND:
            code = .corrupted
            message = "the store file is corrupted; restore it from a copy or rebuild it from an export"
        case MDB_READERS_FULL:
            code = .readersFull
            message = "too many concurrent readers of the store; close other strata processes and retry"
        case MDB_TXN_FULL:
            code = .transactionFull; message = "the write batch is too large; use smaller batches"
        case MDB_BAD_VALSIZE:
            code = .badValueSize; message = "a key is empty or longer than 511 bytes"
        case MDB_VERSION_MISMATCH, MDB_INVALID:
            code = .versionMismatch
            message = "the store was written by an incompatible LMDB version or is not an LMDB store"
        case MDB_INCOMPATIBLE:
            code = .incompatible; message = "a database was opened with incompatible flags"
        case ENOSPC, EDQUOT:
            code = .diskFull; message = "no space left on the device holding the store; free space and retry (nothing was written)"
        case EFBIG:
            code = .diskFull; message = "the store file reached the process's file size limit (ulimit -f); raise it and retry (nothing was written)"
        case EACCES, EPERM:
            code = .permissionDenied; message = "permission denied on the store; check the owner and mode of its directory"
        case EBUSY, EAGAIN:
            code = .busy; message = "the store is busy; retry"
        case EINVAL:
            code = .invalidArgument; message = "invalid argument to the storage engine"
        case ENOENT:
            code = .io; message = "the store directory does not exist"
        case EIO:
            code = .io;
            message =
                "writing the store failed (a full disk, a file size limit or a failing disk); free space and retry: nothing of this transaction was committed"
        case ENOMEM:
            code = .io; message = "out of memory or address space for the store's map"
        default:
            code = .other
            message = "storage error: \(String(cString: mdb_strerror(rc)))"
        }
        return StorageError(code: code, message: message, operation: operation)
    }
}

@inline(__always)
func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws {
    if rc != 0 { throw StorageError.lmdb(rc, operation()) }
}
