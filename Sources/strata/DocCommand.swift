import ArgumentParser
import Foundation
import StrataApp
import StrataDomain
import StrataPresentation
import StrataJSON

struct DocCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doc",
        abstract: "Read keyed documents now or as of any event or date.",
        discussion: reflowed(
            """
            --projection picks the table: documents (recorded with `strata record`), items (fetched
            list items), details, images, sources or http-cache; the collection of items, details and
            images is the source name.
            """),
        subcommands: [List.self, Show.self, History.self, Diff.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List a collection's documents.",
            discussion: reflowed(
                """
                Examples:
                  strata doc list cars
                  strata doc list cars --as-of 3
                  strata doc list cars --as-of 2026-01-01T00:00:00Z --format json
                """)
        )
        @OptionGroup var location: StoreLocation
        @Option(help: "documents, items, details, images, sources or http-cache.") var projection = "documents"
        @Argument(help: "The collection.") var collection: String
        @Option(help: "Read as of a seq or an ISO 8601 date.") var asOf: AsOf?
        @Flag(help: "Include removed documents.") var includeRemoved = false
        @Option(help: "table, json or ndjson.") var format: OutputFormat = .table

        func run() async throws {
            try await reportingErrors {
                let documents = try await location.app().useCases.documents
                let (seq, states) = try await documents.list(projection: projection, collection: collection, at: asOf?.point, includeRemoved: includeRemoved)
                switch format {
                case .json, .ndjson: emit(states.map(\.json), as: format)
                case .table:
                    if states.isEmpty { emit("no documents in \(collection)\(seq.map { " as of seq \($0)" } ?? "")"); return }
                    var t = TextTable(headers: ["KEY", "VERSION", "CHANGED", "STATE", "DOCUMENT"])
                    for s in states {
                        t.rows.append([s.key, String(s.version), String(s.changedSeq), s.removed ? "removed" : "present", s.document.canonicalString])
                    }
                    emit(t.render())
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Show one document.",
            discussion: "Examples:\n  strata doc show cars 42\n  strata doc show cars 42 --as-of 2"
        )
        @OptionGroup var location: StoreLocation
        @OptionGroup var document: DocumentSelection
        @Option(help: "Read as of a seq or an ISO 8601 date.") var asOf: AsOf?
        @Option(help: "table or json.") var format: OutputFormat = .table

        func run() async throws {
            try await reportingErrors {
                let documents = try await location.app().useCases.documents
                let (collection, key, projection) = (document.collection, document.key, document.projection)
                let (seq, found) = try await documents.document(projection: projection, collection: collection, key: key, at: asOf?.point)
                guard let s = found else {
                    throw CLIError(
                        "no document \(key) in \(collection)\(seq.map { " as of seq \($0)" } ?? ""); list keys with `strata doc list \(collection)`",
                        exit: ExitCodes.notFound)
                }
                if format == .table {
                    emit(
                        """
                        \(collection)/\(key)  version \(s.version)\(s.removed ? " (removed)" : "")  first seen seq \(s.firstSeq), changed at seq \(s.changedSeq)\(s.lastSeenSeq.map { ", last seen seq \($0)" } ?? "")
                        \(s.document.prettyString)
                        """)
                } else {
                    emit(s.json.prettyString)
                }
            }
        }
    }

    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "history",
            abstract: "Every version of a document with its field-level changes.",
            discussion: "Examples:\n  strata doc history cars 42\n  strata doc history cars 42 --format json"
        )
        @OptionGroup var location: StoreLocation
        @OptionGroup var document: DocumentSelection
        @Option(help: "Only versions up to this seq or date.") var asOf: AsOf?
        @Option(help: "table, json or ndjson.") var format: OutputFormat = .table

        func run() async throws {
            try await reportingErrors {
                let documents = try await location.app().useCases.documents
                let (collection, key, projection) = (document.collection, document.key, document.projection)
                let versions = try await documents.history(projection: projection, collection: collection, key: key, upTo: asOf?.point)
                if versions.isEmpty {
                    throw CLIError("no history for \(key) in \(collection); list keys with `strata doc list \(collection)`", exit: ExitCodes.notFound)
                }
                switch format {
                case .json, .ndjson: emit(versions.map(\.json), as: format)
                case .table:
                    var lines: [String] = []
                    for v in versions {
                        lines.append("v\(v.version)  seq \(v.seq)  \(TimeText.format(v.recordedAt.date))  \(v.kind.rawValue)")
                        for c in v.changes { lines.append("    \(c.summary)") }
                    }
                    emit(lines.joined(separator: "\n"))
                }
            }
        }
    }
}

extension DocCommand {
    struct Diff: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "diff",
            abstract: "What was added, removed and changed in a collection between two points.",
            discussion: reflowed(
                """
                Examples:
                  strata doc diff cars --projection items --from 2026-01-01 --to 2026-03-01
                  strata doc diff cars --from 3 --to 9 --format json
                """)
        )
        @OptionGroup var location: StoreLocation
        @Option(help: "documents, items, details, images, sources or http-cache.") var projection = "documents"
        @Argument(help: "The collection (for items: the source name).") var collection: String
        @Option(help: "The earlier point: a seq or an ISO 8601 date.") var from: AsOf
        @Option(help: "The later point (default: now).") var to: AsOf?
        @Option(help: "table, json or ndjson.") var format: OutputFormat = .table

        func run() async throws {
            try await reportingErrors {
                let documents = try await location.app().useCases.documents
                let (a, b, diffs) = try await documents.diff(projection: projection, collection: collection, from: from.point, to: to?.point)
                switch format {
                case .json, .ndjson: emit(diffs.map(\.json), as: format)
                case .table:
                    var lines = [
                        "\(collection): seq \(a) → \(b): "
                            + ChangeKind.allCases.map { k in "\(diffs.filter { $0.kind == k }.count) \(k.rawValue)" }.joined(separator: ", ")
                    ]
                    for d in diffs {
                        let mark =
                            switch d.kind {
                            case .added: "+";
                            case .removed: "-";
                            case .changed: "~";
                            case .reappeared: "↺"
                            }
                        lines.append("\(mark) \(d.key)")
                        for c in d.changes { lines.append("    \(c.summary)") }
                    }
                    emit(lines.joined(separator: "\n"))
                }
            }
        }
    }
}

extension PatchOperation {
    /// `~ /price: 1000 → 900`, `+ /km: 5`, `- /tags: [...]`.
    var summary: String {
        switch op {
        case .add: "+ \(path): \(value?.displayText ?? "")"
        case .remove: "- \(path): \(old?.displayText ?? "")"
        case .replace: "~ \(path): \(old?.displayText ?? "") → \(value?.displayText ?? "")"
        }
    }
}

/// Which document: the projection's table, the collection and the key.
struct DocumentSelection: ParsableArguments {
    @Option(help: "documents, items, details, images, sources or http-cache.") var projection = "documents"
    @Argument(help: "The collection (for items, details and images: the source name).") var collection: String
    @Argument(help: "The document's key.") var key: String
}
