public import EventStore
import StrataData
public import StrataDomain
import StrataPresentation
public import Swinject

/// The composition root: assembles Data, Domain and Presentation once, at the executable's
/// entry, and hands out what the commands need. No container is passed further down.
public struct StrataApp: Sendable {
    /// Makes the view models of every screen.
    public let viewModels: ViewModelFactory
    /// The use cases, for machine-readable output that needs no view state.
    public let useCases: UseCases
    /// Whether the store is encrypted: it keeps no sorted index, so a sort reads every item.
    public let storeIsEncrypted: Bool

    /// Assembles the app over an opened store.
    public init(store: EventStore, configuration: AppConfiguration) {
        storeIsEncrypted = store.isEncrypted
        let assembler = Self.assembler(store: store, configuration: configuration)
        viewModels = assembler.resolver.resolve(ViewModelFactory.self)!
        useCases = assembler.resolver.resolve(UseCases.self)!
    }

    /// The assembler with every registration (also used by the test that resolves them all).
    ///
    /// Every registration is built once and shared (`.container`): the app is assembled once per
    /// process and everything is resolved here. Swinject's default, `.graph`, keeps each instance
    /// through a weak reference, and on Linux the `as? AnyObject` behind it scans every protocol
    /// conformance in the binary for each struct it sees, at every command's start.
    public static func assembler(store: EventStore, configuration: AppConfiguration) -> Assembler {
        Assembler(
            [
                DataAssembly(store: store, configuration: configuration),
                DomainAssembly(configuration: configuration),
                PresentationAssembly(configuration: configuration)
            ], container: Container(defaultObjectScope: .container))
    }
}

/// The resolved use cases.
public struct UseCases: Sendable {
    public let query: QueryItems
    public let refresh: RefreshSource
    public let loadDetail: LoadItemDetail
    public let history: GetItemHistory
    public let diff: DiffCollection
    public let replay: ReplayLog
    public let importHistory: ImportHistory
    public let export: ExportSource
    public let manageSources: ManageSources
    public let sources: any SourceRepository
    public let write: WriteItems
    public let push: PushOutbox
    public let config: ManageConfig
    public let serve: ServeRecordings
    /// The store's upkeep: verify, rebuild, statistics, raw appends.
    public let maintenance: MaintainStore
    /// Keyed documents of any projection.
    public let documents: ReadDocuments
}
