package import EventStore
import StrataData
import StrataAdapters
package import StrataDomain
import StrataPresentation
package import Swinject

/// The composition root: assembles Data, Domain and Presentation once, at the executable's
/// entry, and hands out what the commands need. No container is passed further down.
package struct StrataApp: Sendable {
    /// Makes the view models of every screen.
    package let viewModels: ViewModelFactory
    /// The use cases, for machine-readable output that needs no view state.
    package let useCases: UseCases
    /// Whether the store is encrypted: it keeps no sorted index, so a sort reads every item.
    package let storeIsEncrypted: Bool
    /// The HTTP client that forwards a request to a server and times it (the proxy's; `bench ui`
    /// asks `serve`'s pages with it).
    package let upstream: any UpstreamClient

    /// Assembles the app over an opened store.
    package init(store: EventStore, configuration: AppConfiguration) {
        storeIsEncrypted = store.isEncrypted
        let assembler = Self.assembler(store: store, configuration: configuration)
        viewModels = assembler.resolver.required(ViewModelFactory.self)
        useCases = assembler.resolver.required(UseCases.self)
        upstream = assembler.resolver.required((any UpstreamClient).self)
    }

    /// The assembler with every registration (also used by the test that resolves them all).
    ///
    /// Every registration is built once and shared (`.container`): the app is assembled once per
    /// process and everything is resolved here. Swinject's default, `.graph`, keeps each instance
    /// through a weak reference, and on Linux the `as? AnyObject` behind it scans every protocol
    /// conformance in the binary for each struct it sees, at every command's start.
    package static func assembler(store: EventStore, configuration: AppConfiguration) -> Assembler {
        Assembler(
            [
                DataAssembly(store: store, configuration: configuration),
                DomainAssembly(configuration: configuration),
                PresentationAssembly(configuration: configuration)
            ], container: Container(defaultObjectScope: .container))
    }
}

/// The resolved use cases.
package struct UseCases: Sendable {
    package let query: QueryItems
    package let refresh: RefreshSource
    package let loadDetail: LoadItemDetail
    package let history: GetItemHistory
    package let diff: DiffCollection
    package let replay: ReplayLog
    package let importHistory: ImportHistory
    package let export: ExportSource
    package let manageSources: ManageSources
    package let sources: any SourceRepository
    package let write: WriteItems
    package let push: PushOutbox
    package let config: ManageConfig
    package let serve: ServeRecordings
    /// The store's upkeep: verify, rebuild, statistics, raw appends.
    package let maintenance: MaintainStore
    /// Keyed documents of any projection.
    package let documents: ReadDocuments
    /// Fetches each scheduled source when it is due (`strata watch`).
    package let watch: WatchSources
    /// A source's changes, newest first (feeds).
    package let feed: ReadChangeFeed
    /// Alerts: add, list, remove, test.
    package let alerts: ManageAlerts
    /// Matches recorded changes against the alerts and queues notifications.
    package let notify: QueueNotifications
    /// Sends queued notifications.
    package let deliver: DeliverNotifications
    /// A source's shape and its drift.
    package let schema: ReadSchema
    /// A client's traffic forwarded and recorded (`proxy`, `serve --on-miss proxy`).
    package let recordTraffic: RecordTraffic
    /// HAR and WARC files in, and any source's exchanges out.
    package let importTraffic: ImportTraffic
    package let exportTraffic: ExportTraffic
    /// The first point where a check fails.
    package let bisect: BisectHistory
    /// Items erased from every stored version (`strata forget`), and erasures to finish.
    package let forget: ForgetItems
    package let erasures: any ErasureRepository
    /// The team's redaction key (``ManageRedactionKey``).
    package let redactionKey: ManageRedactionKey
    /// Every item change in a span, and the fields that churn (`changes`, `schema --changes`).
    package let changes: ReadChanges
}

extension StrataApp {
    /// Checks a source spec as defining it will, before any store is opened (a spec that cannot
    /// be defined creates no store).
    /// - Throws: ``SpecProblem`` naming the field at fault, or ``RepositoryError`` `invalidQuery`.
    package static func validate(_ spec: SourceSpec, keepingLiteralSecrets: Bool) throws {
        try spec.validateForDefinition(keepingLiteralSecrets: keepingLiteralSecrets)
    }
}
