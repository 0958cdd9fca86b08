package import StrataDomain
package import StrataData

/// ``RemoteRepository`` through the data layer's ``Fetcher`` (libcurl). Failures are recorded as
/// `FetchFailed` events by the fetcher and surface here as ``RepositoryError`` `network`.
package struct CurlRemoteRepository: RemoteRepository {
    let fetcher: Fetcher
    let catalog: SourceCatalog
    let options: FetchOptions

    package init(fetcher: Fetcher, catalog: SourceCatalog, options: FetchOptions = FetchOptions()) {
        self.fetcher = fetcher
        self.catalog = catalog
        self.options = options
    }

    package func refresh(source name: String, request: RefreshRequest) async throws -> RefreshResult {
        let definition = try await catalog.required(name)
        var options = self.options
        switch request.details {
        case .none: options.details = false
        case .changed: options.details = true; options.detailPolicy = .changed
        case .all(let maxAge): options.details = true; options.detailPolicy = .all; options.detailMaxAge = maxAge
        }
        options.images = request.images
        options.pageLimit = request.pageLimit ?? options.pageLimit
        do {
            return RefreshResult(summary: try await fetcher.fetch(definition, options: options))
        } catch let e as RedactionKeyError {
            throw e.repositoryError()
        } catch let e as FetchError {
            throw RepositoryError(.network, e.description, next: e.nextStep(source: name), cause: e, retryAfter: e.retryAfter)
        }
    }

    package func loadDetail(source name: String, id: String) async throws {
        let definition = try await catalog.required(name)
        let summary: FetchSummary
        do { summary = try await fetcher.fetchDetail(definition, key: id, options: options) } catch let e as RedactionKeyError {
            throw e.repositoryError()
        } catch let e as FetchError {
            throw RepositoryError(.network, e.description, next: e.nextStep(source: name), cause: e)
        }
        if let failure = summary.failures.first { throw RepositoryError(.network, failure) }
    }

}

extension SourceCatalog {
    /// The definition of `name`. Throws ``RepositoryError`` `notFound` (or `storage`).
    func required(_ name: String) async throws -> SourceDefinition {
        guard let d = try await storage({ try await get(name) }) else {
            throw SourceCatalogError.unknown(name).repositoryError
        }
        if d.recorded == true {
            throw RepositoryError(
                .invalidQuery, "\(name) is a recorded source (recorded traffic, HAR and WARC imports): it has no list to fetch", next: .readRecorded)
        }
        return d
    }
}
