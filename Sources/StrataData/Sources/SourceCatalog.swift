public import EventStore
import Foundation

/// Source definitions as events (`SourceDefined`, `SourceChanged`, `SourceRemoved`) and their
/// current state from the `sources` projection.
public struct SourceCatalog: Sendable {
    let store: EventStore

    public init(store: EventStore) { self.store = store }

    /// All defined sources, by name.
    public func all() async throws -> [SourceDefinition] {
        try await store.documents(projection: "sources") { try $0.states(collection: "sources") }.map { try Self.decode($0.document) }
    }

    public func get(_ name: String) async throws -> SourceDefinition? {
        guard let s = try await store.documents(projection: "sources", { try $0.state(collection: "sources", key: name) }), !s.removed else { return nil }
        return try Self.decode(s.document)
    }

    /// Validates and records a new definition (or a change with `replace`). A literal credential
    /// in a header is refused, unless `keepingLiteralSecrets`: then it is kept in
    /// ``SourceSecrets`` and the definition in the log refers to it.
    @discardableResult
    public func define(_ source: SourceDefinition, replace: Bool = false, keepingLiteralSecrets: Bool = false) async throws -> AppendOutcome {
        var source = source
        var taken: [String: String] = [:]
        if keepingLiteralSecrets { (source, taken) = source.takingLiteralSecrets() }
        try source.validate()
        let exists = try await get(source.name) != nil
        if exists && !replace {
            throw FetchError(code: .source, message: "source \(source.name) already exists; use --replace to change it", url: source.url)
        }
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
        guard try await get(name) != nil else {
            throw FetchError(code: .source, message: "no source named \(name); see `strata source list`", url: "")
        }
        try await store.append(NewEvent(type: DataEvents.sourceRemoved, stream: name, metadata: [("source", name)]))
    }

    static func decode(_ doc: JSONValue) throws -> SourceDefinition {
        try JSONDecoder().decode(SourceDefinition.self, from: Data(doc.canonicalBytes))
    }
}
