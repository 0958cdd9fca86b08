package import EventStore
import Foundation
package import Logging
import StrataData
import StrataAdapters
package import StrataDomain

/// Where the store is and how it is opened: the one place that opens a store, with the one list
/// of projections Strata keeps.
package struct StoreAccess: StoreOpening {
    /// The store's directory.
    package var path: String
    /// The encrypted store's key file; nil for a store without encryption.
    package var keyFile: String?
    /// `full` (the default), `nosync` or `nometasync`: how commits reach the disk.
    package var durability: String?
    package var logger: Logger

    package init(path: String, keyFile: String? = nil, durability: String? = nil, logger: Logger = Logger(label: "strata")) {
        self.path = path
        self.keyFile = keyFile
        self.durability = durability
        self.logger = logger
    }

    /// The projections Strata keeps, registered in one place.
    package static var projections: [any Projection] { [KeyedDocumentProjection()] + DataProjections.all }

    /// The key in ``keyFile``, read (never printed).
    /// - Throws: ``RepositoryError`` `key` when the file is not a key.
    func key() throws -> StoreKey? {
        guard let keyFile else { return nil }
        return try engine { try StoreKey.load(file: keyFile) }
    }

    func options() throws -> StoreOptions {
        var options = StoreOptions()
        options.logger = logger
        options.key = try key()
        if let durability, let d = StoreOptions.Durability(rawValue: durability) { options.durability = d }
        return options
    }

    /// Opens the store (creating it if missing), brings its projections up to the log's head
    /// while `progress` hears how far they are, and assembles the app over it.
    package func open(
        configuration: AppConfiguration, progress: @escaping @Sendable (CatchUpProgress) -> Void = { _ in }
    ) async throws -> StrataApp {
        StrataApp(store: try await openStore(progress: progress), configuration: configuration)
    }

    /// The engine's store itself, for the test aid's raw appends and reads.
    package func openStore(progress: @escaping @Sendable (CatchUpProgress) -> Void = { _ in }) async throws -> EventStore {
        let options = try options()
        let store = try await engine {
            try await EventStore.open(at: path, projections: Self.projections, options: options) {
                progress(CatchUpProgress(projection: $0.projection, applied: $0.applied, head: $0.head))
            }
        }
        // An erasure recorded but not applied (a `forget` killed part-way, one pulled from a team
        // log) is finished before anything reads the store.
        do {
            try await ItemErasure(store: store).applyPending()
            try await SourceRetention(store: store).applyPending()
        } catch {
            options.logger.warning("an erasure in the log could not be finished: \(error); the store should be verified")
        }
        return store
    }

    package func opened() async throws -> EventStore { try await openStore() }

    /// The store's files, whether or not it is open: the chain check without a key, compaction, rekey.
    package var files: ManageStoreFiles {
        let leases = PostgresSourceLeaseRepository(
            storePath: path, ttl: AppConfiguration.defaultLeaseSeconds, timeout: AppConfiguration.defaultTeamTimeout, logger: logger)
        return ManageStoreFiles(files: LMDBStoreFiles(access: self, leases: leases))
    }

    /// The team logs this store shares its history through; `operationTimeout` bounds each
    /// database step.
    package func team(operationTimeout: Duration = .seconds(30)) -> SyncTeam {
        SyncTeam(team: PostgresTeamRepository(access: self, operationTimeout: operationTimeout))
    }

    /// Key files, which belong to no store until one is created or rekeyed under them.
    package static var keyFiles: ManageStoreFiles { StoreAccess(path: "").files }
}
