package import Foundation
package import StrataJSON

/// One field of a source's shape: the JSON types seen at a path across the current items (or
/// details, for paths starting `detail:`), how many carry it, and when it appeared.
package struct FieldShape: Sendable, Hashable {
    /// Dotted, `[]` for an array's elements: `owners[].name`; `detail:specs.engine` in details.
    package var path: String
    /// Type (`string`, `number`, `boolean`, `null`, `array`, `object`) → how many have it there.
    package var types: [String: Int]
    /// How many items (details) carry the path.
    package var items: Int
    package var firstSeq: UInt64
    /// The seq its counts last changed.
    package var lastChangedSeq: UInt64
    /// A value of each type, short.
    package var examples: [String: JSONValue]

    package init(path: String, types: [String: Int], items: Int, firstSeq: UInt64, lastChangedSeq: UInt64, examples: [String: JSONValue]) {
        self.path = path; self.types = types; self.items = items; self.firstSeq = firstSeq; self.lastChangedSeq = lastChangedSeq; self.examples = examples
    }

    package var isDetail: Bool { path.hasPrefix("detail:") }
    package var typeNames: [String] { types.keys.sorted() }
}

/// A source's shape at a point of the log.
package struct SourceSchema: Sendable, Hashable {
    package var source: String
    package var seq: UInt64
    /// Items present then, and details stored.
    package var items: Int
    package var details: Int
    /// By path.
    package var fields: [FieldShape]

    package init(source: String, seq: UInt64, items: Int, details: Int, fields: [FieldShape]) {
        self.source = source; self.seq = seq; self.items = items; self.details = details; self.fields = fields
    }
}

/// A change of a source's shape: a field appeared, went, or its types changed.
package struct SchemaDrift: Sendable, Hashable {
    package enum Kind: String, Sendable, Hashable { case added, gone, typeChanged }
    package var kind: Kind
    package var seq: UInt64
    package var observedAt: Date
    package var path: String
    package var before: [String]
    package var after: [String]
    /// Items (details) carrying the path after the change.
    package var items: Int
    /// A value of the new type.
    package var example: JSONValue?

    package init(kind: Kind, seq: UInt64, observedAt: Date, path: String, before: [String], after: [String], items: Int, example: JSONValue?) {
        self.kind = kind; self.seq = seq; self.observedAt = observedAt; self.path = path; self.before = before; self.after = after; self.items = items
        self.example = example
    }

    /// `price: type changed number → string`; `field color added`; `field km gone`.
    package var headline: String {
        switch kind {
        case .added: "field \(path) added (\(after.joined(separator: "|")))"
        case .gone: "field \(path) gone (was \(before.joined(separator: "|")))"
        case .typeChanged: "\(path): type changed \(before.joined(separator: "|")) → \(after.joined(separator: "|"))"
        }
    }
}

/// The shapes the `schema` projection keeps.
package protocol SchemaRepository: Sendable {
    /// The shape of `source` as of `seq` (now when nil).
    func schema(source: String, asOf seq: UInt64?) async throws -> SourceSchema
    /// The drifts of `source`'s shape after seq `after` (all: 0) up to seq `upTo`, oldest first.
    func drift(source: String, after: UInt64, upTo: UInt64) async throws -> [SchemaDrift]
}

extension SchemaRepository {
    /// The drifts of `source`'s shape after seq `after`, to the log's head.
    func drift(source: String, after: UInt64) async throws -> [SchemaDrift] { try await drift(source: source, after: after, upTo: .max) }
}
