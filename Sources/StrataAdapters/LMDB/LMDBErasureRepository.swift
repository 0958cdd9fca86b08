package import StrataDomain
package import EventStore
import Foundation
package import StrataData

/// ``ErasureRepository`` over the log (``ItemErasure``) and the source catalog.
package struct LMDBErasureRepository: ErasureRepository {
    let erasure: ItemErasure
    let retention: SourceRetention
    let catalog: SourceCatalog

    package init(store: EventStore, catalog: SourceCatalog) {
        erasure = ItemErasure(store: store)
        retention = SourceRetention(store: store)
        self.catalog = catalog
    }

    package func forget(source: String, ids: [String], reason: String, by actor: String) async throws -> ForgetResult {
        try await storage {
            guard let definition = try await catalog.get(source) else {
                throw SourceCatalogError.unknown(source).repositoryError
            }
            do {
                let s = try await erasure.forget(definition, keys: ids, reason: reason, by: actor)
                return ForgetResult(source: s.source, seq: s.seq, items: s.items, bodiesRewritten: s.bodiesRewritten, bodiesErased: s.bodiesErased)
            } catch let e as FetchError where e.code == .source {
                // Nothing left to erase: already forgotten, or never stored.
                for id in ids {
                    if let erased = try await erasure.forgotten(source: source, key: id) {
                        throw RepositoryError(.notFound, "\(id) in \(source) was already erased at seq \(erased.seq): \(erased.reason)", cause: e)
                    }
                }
                throw RepositoryError(.notFound, e.message, next: .listItems(source: source), cause: e)
            }
        }
    }

    package func erasure(source: String, id: String) async throws -> ErasureRecord? {
        try await storage {
            try await erasure.forgotten(source: source, key: id).map { ErasureRecord(seq: $0.seq, reason: $0.reason, erasedAt: $0.recordedAt.date) }
        }
    }

    package func applyPending() async throws -> Int {
        try await storage { try await erasure.applyPending() }
    }

    package func applyRetention(source: String, unlessAppliedWithin interval: Double) async throws -> RetentionDrop? {
        try await storage {
            try await retention.apply(source: source, unlessAppliedWithin: interval).map(RetentionDrop.init)
        }
    }
}
