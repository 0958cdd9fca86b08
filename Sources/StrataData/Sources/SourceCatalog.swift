public import EventStore
import Foundation
import Synchronization

/// Source definitions as events (`SourceDefined`, `SourceChanged`, `SourceRemoved`) and their
/// current state from the `sources` projection.
public struct SourceCatalog: Sendable {
    let store: EventStore

    public init(store: EventStore) { self.store = store }

    /// All defined sources, by name.
    public func all() async throws -> [SourceDefinition] {
        let path = store.path
        return try await store.documents(projection: "sources") { r in
            try r.summaries(collection: "sources").filter { !$0.summary.removed }.map { name, summary in
                try Self.cached(path, name, summary.changedSeq) { try r.state(collection: "sources", key: name)?.document }
            }
        }
    }

    public func get(_ name: String) async throws -> SourceDefinition? {
        let path = store.path
        return try await store.documents(projection: "sources") { r in
            guard let summary = try r.summary(collection: "sources", key: name), !summary.removed else { return nil }
            return try Self.cached(path, name, summary.changedSeq) { try r.state(collection: "sources", key: name)?.document }
        }
    }

    /// Decoded definitions by store, name and the seq of the event that set them: a definition
    /// is read on every fetch and every plan of the watcher, and decoding it (JSON, then
    /// `Codable`) cost more than the rest of a 304 poll. The seq pins the content, so an entry
    /// never goes stale.
    private struct CacheKey: Hashable {
        var store: String
        var name: String
        var seq: UInt64
    }
    private static let cache = Mutex<[CacheKey: SourceDefinition]>([:])

    private static func cached(_ store: String, _ name: String, _ seq: UInt64, _ document: () throws -> JSONValue?) throws -> SourceDefinition {
        let key = CacheKey(store: store, name: name, seq: seq)
        if let d = cache.withLock({ $0[key] }) { return d }
        guard let doc = try document() else { throw DocumentError("source \(name) has no definition") }
        let d = try decode(doc)
        cache.withLock { c in
            if c.count >= 4_096 { c.removeAll(keepingCapacity: true) }
            c[key] = d
        }
        return d
    }

    /// Records a new definition (or a change with `replace`), checked by the caller (the Domain
    /// checks every spec before it is defined). With `keepingLiteralSecrets`, a literal credential
    /// in a header is kept in ``SourceSecrets`` and the definition in the log refers to it.
    @discardableResult
    public func define(_ source: SourceDefinition, replace: Bool = false, keepingLiteralSecrets: Bool = false) async throws -> AppendOutcome {
        var source = source
        var taken: [String: String] = [:]
        if keepingLiteralSecrets { (source, taken) = source.takingLiteralSecrets() }
        let exists = try await get(source.name) != nil
        if exists && !replace { throw SourceCatalogError.exists(source.name) }
        // Secrets kept before stay while a header still refers to them; new ones replace them.
        let secrets = SourceSecrets(storePath: store.path)
        var kept: [String: String] = [:]
        for h in source.headers {
            guard let (name, value) = SourceDefinition.split(header: h), value.contains(SourceDefinition.secretReference(name)) else { continue }
            if let v = taken[name] ?? secrets.value(source: source.name, header: name) { kept[name] = v }
        }
        if !kept.isEmpty || secrets.holds(source: source.name) { try secrets.keep(kept, source: source.name) }
        let body = [UInt8](try JSONEncoder.sorted.encode(source))
        return try await store.append(
            NewEvent(
                type: exists ? DataEvents.sourceChanged : DataEvents.sourceDefined, stream: source.name,
                metadata: [("source", source.name)], payload: body))
    }

    public func remove(_ name: String) async throws {
        guard try await get(name) != nil else { throw SourceCatalogError.unknown(name) }
        try await store.append(NewEvent(type: DataEvents.sourceRemoved, stream: name, metadata: [("source", name)]))
    }

    static func decode(_ doc: JSONValue) throws -> SourceDefinition {
        try JSONDecoder().decode(SourceDefinition.self, from: Data(doc.canonicalBytes))
    }
}

/// A definition that cannot be recorded as asked.
public enum SourceCatalogError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A source of that name exists, and no replacement was asked for.
    case exists(String)
    /// No source has that name.
    case unknown(String)

    public var description: String {
        switch self {
        case .exists(let name): "source \(name) already exists"
        case .unknown(let name): "no source named \(name)"
        }
    }
}
