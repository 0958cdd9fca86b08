public import LMDB

/// The one error the event store throws. Storage failures keep their ``StorageError`` as the cause.
public struct EventStoreError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: Hashable, Sendable {
            case invalidEvent, storage, corrupted, unknownProjection, notFound, invalidArgument, locked, encryption
        }
        fileprivate let base: Base
        /// The event is not acceptable (empty type, NUL bytes, oversize id or metadata).
        public static let invalidEvent = Code(base: .invalidEvent)
        /// The storage engine failed; see `cause`.
        public static let storage = Code(base: .storage)
        /// Stored bytes do not decode or do not match their hash.
        public static let corrupted = Code(base: .corrupted)
        public static let unknownProjection = Code(base: .unknownProjection)
        public static let notFound = Code(base: .notFound)
        public static let invalidArgument = Code(base: .invalidArgument)
        /// The store is encrypted and no key, or another key, was given; or a key was given for a
        /// store without encryption; or a key file is unusable.
        public static let encryption = Code(base: .encryption)
        public var description: String { "\(base)" }
    }

    public var code: Code
    public var message: String
    public var cause: StorageError?
    /// For an `encryption` error: what is wrong with the key, for the layers above to word the
    /// way out.
    public var keyProblem: KeyProblem?

    /// What is wrong with a store's key.
    public enum KeyProblem: Sendable, Hashable {
        /// The store is encrypted and no key was given.
        case missing
        /// The store is not encrypted, and a key was given.
        case unexpected
        /// The key file (when known) cannot be read or is not a key.
        case unusableFile(String?)
    }

    public init(code: Code, message: String, cause: StorageError? = nil, keyProblem: KeyProblem? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
        self.keyProblem = keyProblem
    }

    public var description: String {
        if let cause { return "\(message): \(cause)" }
        return message
    }

    static func invalid(_ message: String) -> EventStoreError { .init(code: .invalidEvent, message: message) }
    static func corrupted(_ message: String) -> EventStoreError { .init(code: .corrupted, message: message) }
}
