import ArgumentParser
import Foundation
import StrataApp
import StrataDomain
import StrataJSON
import StrataPresentation

struct SchemaCommand: AsyncParsableCommand {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case table, json
        case jsonSchema = "json-schema"
    }

    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Show a source's shape (fields, their JSON types and how many items carry them), now, as of a point, or its drift.",
        discussion: reflowed(
            """
            The shape is inferred from every item and detail stored, kept as fetches come in: per
            field path (dotted; `[]` for an array's elements; `detail:` before a detail's) the JSON
            types seen and how many current items carry each. --history lists drift as it happened:
            a field added, a field gone, a type changed, each with its seq, observed time and an
            example. `strata alert add SOURCE NAME --on drift` is told of drift. --changes counts,
            per field path, the changes of existing items that touched it between --from and --to
            (additions and removals not counted), most first: the fields that churn, and the
            candidates for `source change --ignore`.

            Examples:
              strata schema cars
              strata schema cars --format json-schema > cars.schema.json
              strata schema cars --as-of 2026-03-01
              strata schema cars --history
              strata schema cars --changes --from 2026-03-01
            """)
    )

    @OptionGroup var location: StoreLocation
    @Argument(help: "The source.") var source: String
    @Option(help: "Read as of a seq or an ISO 8601 date.") var asOf: PointArgument?
    @Flag(help: "List the drift of the shape: fields added, gone, types changed.") var history = false
    @Flag(help: "Count, per field, the changes that touched it (between --from and --to).") var changes = false
    @Option(help: "--changes: from after this seq or ISO 8601 date (default: the start).") var from: PointArgument?
    @Option(help: "--changes: up to this seq or ISO 8601 date (default: now).") var to: PointArgument?
    @Option(help: "table, json or json-schema (the shape; not with --history).") var format: Format = .table

    func validate() throws {
        if history && format == .jsonSchema { throw ValidationError("--history lists drift: use --format table or json") }
        if changes && (history || asOf != nil || format == .jsonSchema) {
            throw ValidationError("--changes counts changes between --from and --to: not with --history, --as-of or --format json-schema")
        }
        if !changes && (from != nil || to != nil) { throw ValidationError("--from and --to go with --changes") }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            let point = asOf.flatMap { PointInTime(text: $0.text) } ?? .now
            if changes {
                let churn = try await useCase {
                    try await app.useCases.changes.churn(
                        source: source, from: from.flatMap { PointInTime(text: $0.text) }, to: to.flatMap { PointInTime(text: $0.text) } ?? .now)
                }
                switch format {
                case .json, .jsonSchema: emit(SchemaRenderer.json(churn: churn).prettyString)
                case .table: emit(churn.isEmpty ? "no changes of \(source)'s items in that span" : SchemaRenderer.table(churn: churn).render())
                }
                return
            }
            if history {
                let drift = try await app.useCases.schema.history(source: source, upTo: point)
                switch format {
                case .json, .jsonSchema: emit(SchemaRenderer.json(drift).prettyString)
                case .table: emit(drift.isEmpty ? "no drift recorded for \(source) yet; fetch it first" : SchemaRenderer.table(drift).render())
                }
                return
            }
            let schema = try await app.useCases.schema(source: source, at: point)
            switch format {
            case .jsonSchema: emit(SchemaRenderer.jsonSchema(schema).prettyString)
            case .json: emit(SchemaRenderer.json(schema).prettyString)
            case .table:
                emit(
                    schema.fields.isEmpty
                        ? "no items of \(source) stored as of seq \(schema.seq); fetch it first"
                        : SchemaRenderer.heading(schema) + "\n" + SchemaRenderer.table(schema).render())
            }
        }
    }
}
