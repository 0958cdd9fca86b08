package import StrataData
package import StrataDomain

/// ``PushRepository`` through the data layer's ``Pusher`` (libcurl).
package struct CurlPushRepository: PushRepository {
    let pusher: Pusher
    let catalog: SourceCatalog
    let options: PushOptions

    package init(pusher: Pusher, catalog: SourceCatalog, options: PushOptions = PushOptions()) {
        self.pusher = pusher
        self.catalog = catalog
        self.options = options
    }

    package func push(source: String, concurrency: Int) async throws -> PushReport {
        let definition = try await catalog.required(source)
        var options = self.options
        options.concurrency = concurrency
        do {
            return PushReport(source: source, summary: try await pusher.push(definition, options: options))
        } catch let e as FetchError {
            throw RepositoryError(.network, e.message, cause: e)
        }
    }
}
