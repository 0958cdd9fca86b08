import ArgumentParser
import Foundation
import StrataApp
import StrataDomain
import StrataPresentation
import StrataJSON

struct ForgetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Erase items from every stored version; the log keeps that it was done, and why.",
        discussion: reflowed(
            """
            Each item's entries are cut out of every stored list page of the source, its details
            and images are erased, and every projection is folded again, so no list, history,
            index or diff holds it. An ItemForgotten event records who, when, the reason and the
            digests of the bodies it changed, never their content (the ids are named by keyed
            digests). `strata verify` still checks the whole chain and reports the bodies each
            erasure rewrote. `show` and `history` of a forgotten item answer "erased at seq S:
            REASON" (exit 3), `serve` answers 410. Run `strata compact` afterwards: until then
            the erased bytes may remain in the store file's free pages. A later fetch stores the
            item again if the API still has it.

            Examples:
              strata forget cars 17 --reason "GDPR request 2026-114"
              strata forget notes -Nx3 -Nx4 --reason "posted by mistake"
            """)
    )

    @OptionGroup var location: StoreLocation
    @Argument(help: "The source.") var source: String
    @Argument(help: "The ids of the items to forget.") var ids: [String] = []
    @Option(help: "Why they are forgotten (kept in the log).") var reason: String
    @Option(help: "table or json.") var format: OutputFormat = .table

    func validate() throws {
        if ids.isEmpty { throw ValidationError("name at least one id to forget, e.g. `strata forget \(source) 17 --reason \"…\"`") }
        if reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { throw ValidationError("--reason must say why (it is kept in the log)") }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            let user = (try? await app.useCases.write.user()) ?? ProcessInfo.processInfo.environment["USER"] ?? "unknown"
            let r = try await useCase { try await app.useCases.forget(source: source, ids: ids, reason: reason, by: user) }
            switch format {
            case .json, .ndjson:
                emit(r.json.prettyString)
            case .table:
                emit(
                    "forgot \(r.items) item(s) of \(r.source) at seq \(r.seq): \(r.bodiesRewritten) list bodies rewritten, \(r.bodiesErased) details/images erased; run `strata compact` to drop the old bytes from the file"
                )
            }
        }
    }
}
