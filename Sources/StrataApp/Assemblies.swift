package import EventStore
import ChildProcess
import Foundation
import Logging
import StrataData
import StrataDomain
import StrataAdapters
import StrataPresentation
package import Swinject
import TerminalImages

/// Data: the opened store, the libcurl client, the fetcher, the source catalog and the tables.
package struct DataAssembly: Assembly {
    let store: EventStore
    let configuration: AppConfiguration

    package init(store: EventStore, configuration: AppConfiguration) {
        self.store = store
        self.configuration = configuration
    }

    package func assemble(container: Container) {
        let (store, configuration) = (store, configuration)
        container.register(EventStore.self) { _ in store }.inObjectScope(.container)
        // The one way child processes are started.
        container.register(ChildProcessRunner.self) { _ in ChildProcessRunner() }.inObjectScope(.container)
        container.register((any HTTPClient).self) { _ in
            var config = CurlHTTPClient.Configuration(userAgent: configuration.userAgent)
            config.insecureSkipTLSVerify = configuration.insecureSkipTLSVerify
            config.startAtOnce = configuration.requestsSoon
            return CurlHTTPClient(configuration: config)
        }.inObjectScope(.container)
        container.register(Fetcher.self) { r in
            Fetcher(store: r.required(EventStore.self), client: r.required((any HTTPClient).self), logger: configuration.logger)
        }.inObjectScope(.container)
        container.register(SourceCatalog.self) { r in SourceCatalog(store: r.required(EventStore.self)) }
        container.register(ItemTables.self) { r in ItemTables(store: r.required(EventStore.self)) }
        container.register(LocalWrites.self) { r in LocalWrites(store: r.required(EventStore.self)) }
        container.register(OutboxTables.self) { r in OutboxTables(store: r.required(EventStore.self)) }
        container.register(AlertTables.self) { r in AlertTables(store: r.required(EventStore.self)) }
        container.register(Pusher.self) { r in
            Pusher(store: r.required(EventStore.self), client: r.required((any HTTPClient).self), logger: configuration.logger)
        }.inObjectScope(.container)
    }
}

/// Domain: the repositories over LMDB and the network, and the use cases over them.
package struct DomainAssembly: Assembly {
    let configuration: AppConfiguration

    package init(configuration: AppConfiguration) { self.configuration = configuration }

    package func assemble(container: Container) {
        registerReadsAndFetches(container)
        registerSourcesAndWrites(container)
        registerSchemaAndAlerts(container)
        registerItemReads(container)
        registerTrafficAndUseCases(container)
    }

    /// The log, sources, items, the network and leases.
    private func registerReadsAndFetches(_ container: Container) {
        let fetchOptions = FetchOptions(configuration.fetch)
        container.register((any EventLogRepository).self) { r in LMDBEventLogRepository(store: r.required(EventStore.self)) }
        container.register((any SourceRepository).self) { r in LMDBSourceRepository(tables: r.required(ItemTables.self)) }
        container.register((any ItemRepository).self) { r in
            LMDBItemRepository(
                tables: r.required(ItemTables.self), sources: r.required((any SourceRepository).self),
                log: r.required((any EventLogRepository).self))
        }
        container.register((any RemoteRepository).self) { r in
            CurlRemoteRepository(fetcher: r.required(Fetcher.self), catalog: r.required(SourceCatalog.self), options: fetchOptions)
        }
        container.register((any ArchiveRepository).self) { r in
            GitAndFilesArchiveRepository(
                fetcher: r.required(Fetcher.self), catalog: r.required(SourceCatalog.self), runner: r.required(ChildProcessRunner.self))
        }
        let (leaseSeconds, teamTimeout, logger, leaseReport) = (
            configuration.leaseSeconds, configuration.teamTimeout, configuration.logger, configuration.leaseReport
        )
        container.register((any SourceLeaseRepository).self) { r in
            PostgresSourceLeaseRepository(storePath: r.required(EventStore.self).path, ttl: leaseSeconds, timeout: teamTimeout, logger: logger)
        }
        container.register(LeaseSourceForWrite.self) { r in
            LeaseSourceForWrite(leases: r.required((any SourceLeaseRepository).self), report: leaseReport)
        }
        container.register(ImportHistory.self) { r in
            ImportHistory(
                archive: r.required((any ArchiveRepository).self), sources: r.required((any SourceRepository).self),
                lease: r.required(LeaseSourceForWrite.self),
                files: LMDBStoreFiles(
                    access: OpenedStore(r.required(EventStore.self), logger: logger), leases: r.required((any SourceLeaseRepository).self)))
        }
    }

    /// The source catalog, exports, recordings, local writes and the outbox.
    private func registerSourcesAndWrites(_ container: Container) {
        container.register((any SourceCatalogRepository).self) { r in LMDBSourceCatalogRepository(catalog: r.required(SourceCatalog.self)) }
        container.register(ManageSources.self) { r in
            ManageSources(catalog: r.required((any SourceCatalogRepository).self), lease: r.required(LeaseSourceForWrite.self))
        }
        container.register((any ExportRepository).self) { _ in SQLiteExportRepository() }
        container.register(ExportSource.self) { r in
            ExportSource(
                items: r.required((any ItemRepository).self), sources: r.required((any SourceRepository).self),
                log: r.required((any EventLogRepository).self), exporter: r.required((any ExportRepository).self))
        }
        container.register((any RecordingRepository).self) { r in
            LMDBRecordingRepository(store: r.required(EventStore.self), catalog: r.required(SourceCatalog.self))
        }
        container.register(ServeRecordings.self) { r in
            ServeRecordings(recordings: r.required((any RecordingRepository).self), log: r.required((any EventLogRepository).self))
        }
        container.register((any WriteRepository).self) { r in
            LMDBWriteRepository(writes: r.required(LocalWrites.self), outbox: r.required(OutboxTables.self), catalog: r.required(SourceCatalog.self))
        }
        let pushOptions = PushOptions(configuration.push)
        container.register((any PushRepository).self) { r in
            CurlPushRepository(pusher: r.required(Pusher.self), catalog: r.required(SourceCatalog.self), options: pushOptions)
        }
        container.register(WriteItems.self) { r in
            WriteItems(
                writes: r.required((any WriteRepository).self), sources: r.required((any SourceRepository).self),
                lease: r.required(LeaseSourceForWrite.self))
        }
        container.register(PushOutbox.self) { r in
            PushOutbox(
                writes: r.required((any WriteRepository).self), push: r.required((any PushRepository).self), sources: r.required((any SourceRepository).self))
        }
        container.register(ManageConfig.self) { r in ManageConfig(writes: r.required((any WriteRepository).self)) }
        container.register(QueryItems.self) { r in QueryItems(items: r.required((any ItemRepository).self), sources: r.required((any SourceRepository).self)) }
    }

    /// The schema, alerts and the delivery of their notifications.
    private func registerSchemaAndAlerts(_ container: Container) {
        container.register((any SchemaRepository).self) { r in LMDBSchemaRepository(tables: SchemaTables(store: r.required(EventStore.self))) }
        container.register(ReadSchema.self) { r in
            ReadSchema(
                schema: r.required((any SchemaRepository).self), sources: r.required((any SourceRepository).self),
                log: r.required((any EventLogRepository).self))
        }
        container.register((any AlertRepository).self) { r in LMDBAlertRepository(tables: r.required(AlertTables.self)) }
        let userAgent = configuration.userAgent
        container.register((any NotificationSender).self) { r in
            SubprocessNotificationSender(
                webhook: WebhookSender(client: r.required((any HTTPClient).self), userAgent: userAgent),
                exec: ExecSender(runner: r.required(ChildProcessRunner.self)))
        }
        container.register(QueueNotifications.self) { r in
            QueueNotifications(
                alerts: r.required((any AlertRepository).self), log: r.required((any EventLogRepository).self), items: r.required((any ItemRepository).self),
                config: r.required(ManageConfig.self), schema: r.required((any SchemaRepository).self))
        }
        container.register(ManageAlerts.self) { r in
            ManageAlerts(
                alerts: r.required((any AlertRepository).self), sources: r.required((any SourceRepository).self), items: r.required((any ItemRepository).self),
                sender: r.required((any NotificationSender).self))
        }
        container.register(DeliverNotifications.self) { r in
            DeliverNotifications(alerts: r.required((any AlertRepository).self), sender: r.required((any NotificationSender).self))
        }
    }

    /// Refreshes, forgetting, item details, history and diffs, replay, the store tools, watching.
    private func registerItemReads(_ container: Container) {
        container.register(RefreshSource.self) { r in
            RefreshSource(
                remote: r.required((any RemoteRepository).self), sources: r.required((any SourceRepository).self),
                leases: r.required((any SourceLeaseRepository).self),
                notifications: r.required(QueueNotifications.self))
        }
        container.register((any ErasureRepository).self) { r in
            LMDBErasureRepository(store: r.required(EventStore.self), catalog: r.required(SourceCatalog.self))
        }
        container.register(ForgetItems.self) { r in
            ForgetItems(
                erasures: r.required((any ErasureRepository).self), sources: r.required((any SourceRepository).self),
                lease: r.required(LeaseSourceForWrite.self))
        }
        container.register(LoadItemDetail.self) { r in
            LoadItemDetail(
                items: r.required((any ItemRepository).self), sources: r.required((any SourceRepository).self),
                remote: r.required((any RemoteRepository).self), erasures: r.required((any ErasureRepository).self))
        }
        container.register(GetItemHistory.self) { r in
            GetItemHistory(
                items: r.required((any ItemRepository).self), sources: r.required((any SourceRepository).self),
                erasures: r.required((any ErasureRepository).self))
        }
        container.register(DiffCollection.self) { r in
            DiffCollection(items: r.required((any ItemRepository).self), sources: r.required((any SourceRepository).self))
        }
        container.register(ReplayLog.self) { r in ReplayLog(log: r.required((any EventLogRepository).self)) }
        container.register(LMDBStoreMaintenance.self) { r in LMDBStoreMaintenance(store: r.required(EventStore.self)) }
        container.register(MaintainStore.self) { r in MaintainStore(store: r.required(LMDBStoreMaintenance.self)) }
        container.register(ReadDocuments.self) { r in
            ReadDocuments(documents: r.required(LMDBStoreMaintenance.self), store: r.required(LMDBStoreMaintenance.self))
        }
        container.register(WatchSources.self) { r in
            WatchSources(
                sources: r.required((any SourceRepository).self), catalog: r.required(ManageSources.self), refresh: r.required(RefreshSource.self),
                erasures: r.required((any ErasureRepository).self))
        }
        container.register(ReadChangeFeed.self) { r in
            ReadChangeFeed(
                log: r.required((any EventLogRepository).self), items: r.required((any ItemRepository).self), sources: r.required((any SourceRepository).self))
        }
    }

    /// Recorded traffic, bisect, and the use cases as one value.
    private func registerTrafficAndUseCases(_ container: Container) {
        container.register((any TrafficRepository).self) { r in
            let version = configuration.userAgent.split(separator: "/").last.map(String.init) ?? "0"
            return LMDBTrafficRepository(store: r.required(EventStore.self), catalog: r.required(SourceCatalog.self), software: version)
        }
        container.register((any UpstreamClient).self) { r in CurlUpstreamClient(http: r.required((any HTTPClient).self)) }
        container.register(RecordTraffic.self) { r in
            RecordTraffic(
                traffic: r.required((any TrafficRepository).self), upstream: r.required((any UpstreamClient).self),
                lease: r.required(LeaseSourceForWrite.self))
        }
        container.register(ImportTraffic.self) { r in
            ImportTraffic(traffic: r.required((any TrafficRepository).self), lease: r.required(LeaseSourceForWrite.self))
        }
        container.register(ExportTraffic.self) { r in
            ExportTraffic(traffic: r.required((any TrafficRepository).self), log: r.required((any EventLogRepository).self))
        }
        container.register(BisectHistory.self) { r in
            BisectHistory(
                traffic: r.required((any TrafficRepository).self), log: r.required((any EventLogRepository).self),
                sources: r.required((any SourceRepository).self), diff: r.required(DiffCollection.self))
        }
        container.register(UseCases.self) { r in
            UseCases(
                query: r.required(QueryItems.self), refresh: r.required(RefreshSource.self), loadDetail: r.required(LoadItemDetail.self),
                history: r.required(GetItemHistory.self), diff: r.required(DiffCollection.self), replay: r.required(ReplayLog.self),
                importHistory: r.required(ImportHistory.self), export: r.required(ExportSource.self), manageSources: r.required(ManageSources.self),
                sources: r.required((any SourceRepository).self),
                write: r.required(WriteItems.self), push: r.required(PushOutbox.self), config: r.required(ManageConfig.self),
                serve: r.required(ServeRecordings.self), maintenance: r.required(MaintainStore.self), documents: r.required(ReadDocuments.self),
                watch: r.required(WatchSources.self), feed: r.required(ReadChangeFeed.self), alerts: r.required(ManageAlerts.self),
                notify: r.required(QueueNotifications.self), deliver: r.required(DeliverNotifications.self), schema: r.required(ReadSchema.self),
                recordTraffic: r.required(RecordTraffic.self), importTraffic: r.required(ImportTraffic.self), exportTraffic: r.required(ExportTraffic.self),
                bisect: r.required(BisectHistory.self), forget: r.required(ForgetItems.self), erasures: r.required((any ErasureRepository).self),
                redactionKey: ManageRedactionKey(keys: LMDBRedactionKeyRepository(store: r.required(EventStore.self))),
                changes: ReadChanges(
                    items: r.required((any ItemRepository).self), sources: r.required((any SourceRepository).self),
                    log: r.required((any EventLogRepository).self)))
        }
    }
}

/// Presentation: thumbnails and the factory that makes view models on the main actor.
package struct PresentationAssembly: Assembly {
    let configuration: AppConfiguration

    package init(configuration: AppConfiguration) { self.configuration = configuration }

    package func assemble(container: Container) {
        let configuration = configuration
        container.register(ThumbnailSettings?.self) { _ in
            configuration.thumbnails.map {
                ThumbnailSettings(renderer: Thumbnailer(mode: $0), columns: configuration.thumbnailColumns, rows: configuration.thumbnailRows)
            }
        }
        container.register(ViewModelFactory.self) { r in
            ViewModelFactory(
                query: r.required(QueryItems.self), refresh: r.required(RefreshSource.self), loadDetail: r.required(LoadItemDetail.self),
                history: r.required(GetItemHistory.self), diff: r.required(DiffCollection.self), replay: r.required(ReplayLog.self),
                items: r.required((any ItemRepository).self), sources: r.required((any SourceRepository).self),
                thumbnails: r.required(ThumbnailSettings?.self), write: r.required(WriteItems.self), push: r.required(PushOutbox.self)
            )
        }
    }
}

extension Thumbnailer: ImageRenderer {}

extension Resolver {
    /// The registered `T`. A registration missing from the composition root is a programming
    /// error, not a user's: `AppAssemblyTests.everyRegistrationResolves` resolves every use case
    /// (and so every registration they need) against a real store, and this names the type.
    func required<T>(_ type: T.Type) -> T {
        guard let value = resolve(type) else { preconditionFailure("the composition root has no registration for \(T.self)") }
        return value
    }
}
