/// An item's full detail: downloaded into the store first when reading now and online, then read
/// from the store. A failed download keeps the stored detail and reports the error beside it.
package struct LoadItemDetail: Sendable {
    let items: any ItemRepository
    let sources: any SourceRepository
    let remote: any RemoteRepository
    let erasures: (any ErasureRepository)?

    package init(items: any ItemRepository, sources: any SourceRepository, remote: any RemoteRepository, erasures: (any ErasureRepository)? = nil) {
        self.items = items
        self.sources = sources
        self.remote = remote
        self.erasures = erasures
    }

    package struct Result: Sendable, Equatable {
        package var source: Source
        package var item: Item
        /// Why the download failed, when it did (the item is the stored one).
        package var refreshError: RepositoryError?
        /// Whether the network was asked.
        package var refreshed: Bool
    }

    /// - Throws: ``RepositoryError`` `notFound` for an unknown source or an item absent at `point`
    ///   (for a forgotten item: "erased at seq S: REASON", and its detail is not downloaded again).
    ///   An id the store has never held is not looked up on the network either, unless `fresh`:
    ///   a mistyped id answers at once and leaves no failed download in the log.
    package func callAsFunction(source name: String, id: String, at point: PointInTime = .now, offline: Bool = false, fresh: Bool = false) async throws
        -> Result
    {
        let source = try await sources.source(named: name)
        if let erased = try await erasures?.erasure(source: name, id: id), try await items.item(source: name, id: id, at: point) == nil {
            throw RepositoryError(.notFound, "\(id) in \(name) was \(erased.message)")
        }
        var refreshError: RepositoryError?
        let online = point == .now && !offline && source.hasDetails
        if online && !fresh, try await items.item(source: name, id: id, at: .now) == nil,
            try await items.history(source: name, id: id, upTo: .now).isEmpty
        {
            throw RepositoryError(.notFound, "no item \(id) in \(name): the store never held it", next: .listItems(source: name))
        }
        if online {
            do { try await remote.loadDetail(source: name, id: id) } catch let e as RepositoryError {
                refreshError = e
            } catch {
                refreshError = RepositoryError(.network, "could not download the detail of \(id): \(error)", cause: error)
            }
        }
        guard let item = try await items.item(source: name, id: id, at: point) else {
            if let refreshError, refreshError.code != .network { throw refreshError }
            let when = point == .now ? "" : " at that point"
            throw RepositoryError(.notFound, "no item \(id) in \(name)\(when)", next: .listItems(source: name))
        }
        return Result(source: source, item: item, refreshError: refreshError, refreshed: online)
    }

    /// The bytes of the item's stored image, with the item (nil bytes: none stored).
    /// - Throws: as reading the item offline does.
    package func image(source name: String, id: String, at point: PointInTime = .now) async throws -> (item: Item, bytes: [UInt8]?) {
        let item = try await self(source: name, id: id, at: point, offline: true).item
        guard let image = item.image else { return (item, nil) }
        return (item, try await items.imageData(image))
    }
}
