package import EventStore
package import Logging
import StrataDomain

/// A store opened on demand: what adapters over a store that is closed most of the time (its
/// files, the team log's pulls and pushes) are given by the composition root, which alone
/// knows how a store is opened.
package protocol StoreOpening: Sendable {
    /// The store's directory.
    var path: String { get }
    var logger: Logger { get }
    /// Opens the store, its projections brought up to the log's head.
    func opened() async throws -> EventStore
}

/// The process's own store, already open: for a command that replaces it when it is done with it
/// (an import that ends packed). After a replacement the store must not be used again.
package struct OpenedStore: StoreOpening {
    let store: EventStore
    package let logger: Logger

    package init(_ store: EventStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    package var path: String { store.path }
    package func opened() async throws -> EventStore { store }
}

/// Runs an engine call, its errors as repository errors with the engine's words: a missing or
/// wrong key is `key`, anything else `storage`.
package func engine<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch let e as EventStoreError { throw e.repositoryError }
}

package func engine<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let e as EventStoreError { throw e.repositoryError }
}
