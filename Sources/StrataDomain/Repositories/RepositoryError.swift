/// A failure of a repository or a use case: a code to branch on, a message that says what went
/// wrong in the Domain's terms, what the person can do next (each front end words it), and the
/// cause.
package struct RepositoryError: Error, Sendable, CustomStringConvertible, Equatable {
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Raw: String { case notFound, invalidQuery, storage, network, conflict, key }
        private let raw: Raw
        private init(_ raw: Raw) { self.raw = raw }
        /// The source, item or point does not exist.
        package static let notFound = Code(.notFound)
        /// The query cannot be answered as asked.
        package static let invalidQuery = Code(.invalidQuery)
        /// The store could not be read or written.
        package static let storage = Code(.storage)
        /// The network request failed (the stored data is unchanged).
        package static let network = Code(.network)
        /// Another party holds what this needs (a source leased to another node of a team log).
        package static let conflict = Code(.conflict)
        /// The store is encrypted and its key was not given, or another key was.
        package static let key = Code(.key)
        package var description: String { raw.rawValue }
    }

    package var code: Code
    package var message: String
    /// The way out, typed; nil when the message says it all.
    package var next: NextStep?
    package var cause: String?
    /// Seconds the API asked to be left alone (`Retry-After` on its last answer), for a
    /// `network` failure.
    package var retryAfter: Double?

    package init(_ code: Code, _ message: String, next: NextStep? = nil, cause: (any Error)? = nil, retryAfter: Double? = nil) {
        self.code = code
        self.message = message
        self.next = next
        self.cause = cause.map { "\($0)" }
        self.retryAfter = retryAfter
    }

    package var description: String { message }

    package static func == (a: RepositoryError, b: RepositoryError) -> Bool { a.code == b.code && a.message == b.message }
}
