/// A failure of a repository: a code to branch on, a message that says what to do, and the cause.
public struct RepositoryError: Error, Sendable, CustomStringConvertible, Equatable {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Raw: String { case notFound, invalidQuery, storage, network, conflict, key }
        private let raw: Raw
        private init(_ raw: Raw) { self.raw = raw }
        /// The source, item or point does not exist.
        public static let notFound = Code(.notFound)
        /// The query cannot be answered as asked.
        public static let invalidQuery = Code(.invalidQuery)
        /// The store could not be read or written.
        public static let storage = Code(.storage)
        /// The network request failed (the stored data is unchanged).
        public static let network = Code(.network)
        /// Another party holds what this needs (a source leased to another node of a team log).
        public static let conflict = Code(.conflict)
        /// The store is encrypted and its key was not given, or another key was.
        public static let key = Code(.key)
        public var description: String { raw.rawValue }
    }

    public var code: Code
    public var message: String
    public var cause: String?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause.map { "\($0)" }
    }

    public var description: String { message }

    public static func == (a: RepositoryError, b: RepositoryError) -> Bool { a.code == b.code && a.message == b.message }
}
