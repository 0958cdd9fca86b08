package import EventStore
import ChildProcess
import Foundation
import Logging
import StrataData
import StrataDomain
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
            Fetcher(store: r.resolve(EventStore.self)!, client: r.resolve((any HTTPClient).self)!, logger: configuration.logger)
        }.inObjectScope(.container)
        container.register(SourceCatalog.self) { r in SourceCatalog(store: r.resolve(EventStore.self)!) }
        container.register(ItemTables.self) { r in ItemTables(store: r.resolve(EventStore.self)!) }
        container.register(LocalWrites.self) { r in LocalWrites(store: r.resolve(EventStore.self)!) }
        container.register(OutboxTables.self) { r in OutboxTables(store: r.resolve(EventStore.self)!) }
        container.register(AlertTables.self) { r in AlertTables(store: r.resolve(EventStore.self)!) }
        container.register(Pusher.self) { r in
            Pusher(store: r.resolve(EventStore.self)!, client: r.resolve((any HTTPClient).self)!, logger: configuration.logger)
        }.inObjectScope(.container)
    }
}

/// Domain: the repositories over LMDB and the network, and the use cases over them.
package struct DomainAssembly: Assembly {
    let configuration: AppConfiguration

    package init(configuration: AppConfiguration) { self.configuration = configuration }

    package func assemble(container: Container) {
        let fetchOptions = FetchOptions(configuration.fetch)
        container.register((any EventLogRepository).self) { r in EngineEventLogRepository(store: r.resolve(EventStore.self)!) }
        container.register((any SourceRepository).self) { r in LMDBSourceRepository(tables: r.resolve(ItemTables.self)!) }
        container.register((any ItemRepository).self) { r in
            LMDBItemRepository(
                tables: r.resolve(ItemTables.self)!, sources: r.resolve((any SourceRepository).self)!,
                log: r.resolve((any EventLogRepository).self)!)
        }
        container.register((any RemoteRepository).self) { r in
            FetcherRemoteRepository(fetcher: r.resolve(Fetcher.self)!, catalog: r.resolve(SourceCatalog.self)!, options: fetchOptions)
        }
        container.register((any ArchiveRepository).self) { r in
            FetcherArchiveRepository(
                fetcher: r.resolve(Fetcher.self)!, catalog: r.resolve(SourceCatalog.self)!, runner: r.resolve(ChildProcessRunner.self)!)
        }
        let (leaseSeconds, teamTimeout, logger, leaseReport) = (
            configuration.leaseSeconds, configuration.teamTimeout, configuration.logger, configuration.leaseReport
        )
        container.register((any SourceLeaseRepository).self) { r in
            TeamLogLeases(storePath: r.resolve(EventStore.self)!.path, ttl: leaseSeconds, timeout: teamTimeout, logger: logger)
        }
        container.register(LeaseSourceForWrite.self) { r in
            LeaseSourceForWrite(leases: r.resolve((any SourceLeaseRepository).self)!, report: leaseReport)
        }
        container.register(ImportHistory.self) { r in
            ImportHistory(
                archive: r.resolve((any ArchiveRepository).self)!, sources: r.resolve((any SourceRepository).self)!,
                lease: r.resolve(LeaseSourceForWrite.self)!)
        }
        container.register((any SourceCatalogRepository).self) { r in EventSourceCatalogRepository(catalog: r.resolve(SourceCatalog.self)!) }
        container.register(ManageSources.self) { r in
            ManageSources(catalog: r.resolve((any SourceCatalogRepository).self)!, lease: r.resolve(LeaseSourceForWrite.self)!)
        }
        container.register((any ExportRepository).self) { _ in SQLiteExportRepository() }
        container.register(ExportSource.self) { r in
            ExportSource(
                items: r.resolve((any ItemRepository).self)!, sources: r.resolve((any SourceRepository).self)!,
                log: r.resolve((any EventLogRepository).self)!, exporter: r.resolve((any ExportRepository).self)!)
        }
        container.register((any RecordingRepository).self) { r in
            LMDBRecordingRepository(store: r.resolve(EventStore.self)!, catalog: r.resolve(SourceCatalog.self)!)
        }
        container.register(ServeRecordings.self) { r in
            ServeRecordings(recordings: r.resolve((any RecordingRepository).self)!, log: r.resolve((any EventLogRepository).self)!)
        }
        container.register((any WriteRepository).self) { r in
            EventWriteRepository(writes: r.resolve(LocalWrites.self)!, outbox: r.resolve(OutboxTables.self)!, catalog: r.resolve(SourceCatalog.self)!)
        }
        let pushOptions = PushOptions(configuration.push)
        container.register((any PushRepository).self) { r in
            PusherPushRepository(pusher: r.resolve(Pusher.self)!, catalog: r.resolve(SourceCatalog.self)!, options: pushOptions)
        }
        container.register(WriteItems.self) { r in
            WriteItems(
                writes: r.resolve((any WriteRepository).self)!, sources: r.resolve((any SourceRepository).self)!,
                lease: r.resolve(LeaseSourceForWrite.self)!)
        }
        container.register(PushOutbox.self) { r in
            PushOutbox(
                writes: r.resolve((any WriteRepository).self)!, push: r.resolve((any PushRepository).self)!, sources: r.resolve((any SourceRepository).self)!)
        }
        container.register(ManageConfig.self) { r in ManageConfig(writes: r.resolve((any WriteRepository).self)!) }
        container.register(QueryItems.self) { r in QueryItems(items: r.resolve((any ItemRepository).self)!, sources: r.resolve((any SourceRepository).self)!) }
        container.register((any SchemaRepository).self) { r in EngineSchemaRepository(tables: SchemaTables(store: r.resolve(EventStore.self)!)) }
        container.register(ReadSchema.self) { r in
            ReadSchema(
                schema: r.resolve((any SchemaRepository).self)!, sources: r.resolve((any SourceRepository).self)!,
                log: r.resolve((any EventLogRepository).self)!)
        }
        container.register((any AlertRepository).self) { r in EventAlertRepository(tables: r.resolve(AlertTables.self)!) }
        let userAgent = configuration.userAgent
        container.register((any NotificationSender).self) { r in
            ProcessNotificationSender(
                webhook: WebhookSender(client: r.resolve((any HTTPClient).self)!, userAgent: userAgent),
                exec: ExecSender(runner: r.resolve(ChildProcessRunner.self)!))
        }
        container.register(QueueNotifications.self) { r in
            QueueNotifications(
                alerts: r.resolve((any AlertRepository).self)!, log: r.resolve((any EventLogRepository).self)!, items: r.resolve((any ItemRepository).self)!,
                config: r.resolve(ManageConfig.self)!, schema: r.resolve((any SchemaRepository).self)!)
        }
        container.register(ManageAlerts.self) { r in
            ManageAlerts(
                alerts: r.resolve((any AlertRepository).self)!, sources: r.resolve((any SourceRepository).self)!, items: r.resolve((any ItemRepository).self)!,
                sender: r.resolve((any NotificationSender).self)!)
        }
        container.register(DeliverNotifications.self) { r in
            DeliverNotifications(alerts: r.resolve((any AlertRepository).self)!, sender: r.resolve((any NotificationSender).self)!)
        }
        container.register(RefreshSource.self) { r in
            RefreshSource(
                remote: r.resolve((any RemoteRepository).self)!, sources: r.resolve((any SourceRepository).self)!,
                leases: r.resolve((any SourceLeaseRepository).self)!,
                notifications: r.resolve(QueueNotifications.self)!)
        }
        container.register((any ErasureRepository).self) { r in
            LMDBErasureRepository(store: r.resolve(EventStore.self)!, catalog: r.resolve(SourceCatalog.self)!)
        }
        container.register(ForgetItems.self) { r in
            ForgetItems(
                erasures: r.resolve((any ErasureRepository).self)!, sources: r.resolve((any SourceRepository).self)!,
                lease: r.resolve(LeaseSourceForWrite.self)!)
        }
        container.register(LoadItemDetail.self) { r in
            LoadItemDetail(
                items: r.resolve((any ItemRepository).self)!, sources: r.resolve((any SourceRepository).self)!,
                remote: r.resolve((any RemoteRepository).self)!, erasures: r.resolve((any ErasureRepository).self)!)
        }
        container.register(GetItemHistory.self) { r in
            GetItemHistory(
                items: r.resolve((any ItemRepository).self)!, sources: r.resolve((any SourceRepository).self)!,
                erasures: r.resolve((any ErasureRepository).self)!)
        }
        container.register(DiffCollection.self) { r in
            DiffCollection(items: r.resolve((any ItemRepository).self)!, sources: r.resolve((any SourceRepository).self)!)
        }
        container.register(ReplayLog.self) { r in ReplayLog(log: r.resolve((any EventLogRepository).self)!) }
        container.register(EngineStoreMaintenance.self) { r in EngineStoreMaintenance(store: r.resolve(EventStore.self)!) }
        container.register(MaintainStore.self) { r in MaintainStore(store: r.resolve(EngineStoreMaintenance.self)!) }
        container.register(ReadDocuments.self) { r in
            ReadDocuments(documents: r.resolve(EngineStoreMaintenance.self)!, store: r.resolve(EngineStoreMaintenance.self)!)
        }
        container.register(WatchSources.self) { r in
            WatchSources(
                sources: r.resolve((any SourceRepository).self)!, catalog: r.resolve(ManageSources.self)!, refresh: r.resolve(RefreshSource.self)!,
                erasures: r.resolve((any ErasureRepository).self)!)
        }
        container.register(ReadChangeFeed.self) { r in
            ReadChangeFeed(
                log: r.resolve((any EventLogRepository).self)!, items: r.resolve((any ItemRepository).self)!, sources: r.resolve((any SourceRepository).self)!)
        }
        container.register((any TrafficRepository).self) { r in
            let version = configuration.userAgent.split(separator: "/").last.map(String.init) ?? "0"
            return LMDBTrafficRepository(store: r.resolve(EventStore.self)!, catalog: r.resolve(SourceCatalog.self)!, software: version)
        }
        container.register((any UpstreamClient).self) { r in CurlUpstreamClient(http: r.resolve((any HTTPClient).self)!) }
        container.register(RecordTraffic.self) { r in
            RecordTraffic(
                traffic: r.resolve((any TrafficRepository).self)!, upstream: r.resolve((any UpstreamClient).self)!,
                lease: r.resolve(LeaseSourceForWrite.self)!)
        }
        container.register(ImportTraffic.self) { r in
            ImportTraffic(traffic: r.resolve((any TrafficRepository).self)!, lease: r.resolve(LeaseSourceForWrite.self)!)
        }
        container.register(ExportTraffic.self) { r in
            ExportTraffic(traffic: r.resolve((any TrafficRepository).self)!, log: r.resolve((any EventLogRepository).self)!)
        }
        container.register(BisectHistory.self) { r in
            BisectHistory(
                traffic: r.resolve((any TrafficRepository).self)!, log: r.resolve((any EventLogRepository).self)!,
                sources: r.resolve((any SourceRepository).self)!, diff: r.resolve(DiffCollection.self)!)
        }
        container.register(UseCases.self) { r in
            UseCases(
                query: r.resolve(QueryItems.self)!, refresh: r.resolve(RefreshSource.self)!, loadDetail: r.resolve(LoadItemDetail.self)!,
                history: r.resolve(GetItemHistory.self)!, diff: r.resolve(DiffCollection.self)!, replay: r.resolve(ReplayLog.self)!,
                importHistory: r.resolve(ImportHistory.self)!, export: r.resolve(ExportSource.self)!, manageSources: r.resolve(ManageSources.self)!,
                sources: r.resolve((any SourceRepository).self)!,
                write: r.resolve(WriteItems.self)!, push: r.resolve(PushOutbox.self)!, config: r.resolve(ManageConfig.self)!,
                serve: r.resolve(ServeRecordings.self)!, maintenance: r.resolve(MaintainStore.self)!, documents: r.resolve(ReadDocuments.self)!,
                watch: r.resolve(WatchSources.self)!, feed: r.resolve(ReadChangeFeed.self)!, alerts: r.resolve(ManageAlerts.self)!,
                notify: r.resolve(QueueNotifications.self)!, deliver: r.resolve(DeliverNotifications.self)!, schema: r.resolve(ReadSchema.self)!,
                recordTraffic: r.resolve(RecordTraffic.self)!, importTraffic: r.resolve(ImportTraffic.self)!, exportTraffic: r.resolve(ExportTraffic.self)!,
                bisect: r.resolve(BisectHistory.self)!, forget: r.resolve(ForgetItems.self)!, erasures: r.resolve((any ErasureRepository).self)!,
                redactionKey: ManageRedactionKey(keys: LedgerRedactionKeyRepository(store: r.resolve(EventStore.self)!)))
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
                query: r.resolve(QueryItems.self)!, refresh: r.resolve(RefreshSource.self)!, loadDetail: r.resolve(LoadItemDetail.self)!,
                history: r.resolve(GetItemHistory.self)!, diff: r.resolve(DiffCollection.self)!, replay: r.resolve(ReplayLog.self)!,
                items: r.resolve((any ItemRepository).self)!, sources: r.resolve((any SourceRepository).self)!,
                thumbnails: r.resolve(ThumbnailSettings?.self)!, write: r.resolve(WriteItems.self)!, push: r.resolve(PushOutbox.self)!
            )
        }
    }
}

extension Thumbnailer: ImageRenderer {}
