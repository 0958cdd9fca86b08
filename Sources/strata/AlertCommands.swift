import ArgumentParser
import Foundation
import StrataApp
import StrataDomain
import StrataJSON
import StrataPresentation

struct AlertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alert",
        abstract: "Tell a webhook or a command when items change the way you care about.",
        discussion: reflowed(
            """
            An alert fires once for each change of an item recorded after it was added that is of one
            of its kinds (--on), touches one of its fields (--field) and satisfies its condition
            (--when). Each match is a notification queued in the log with an id of its own; `strata
            watch` delivers them as they come (and `strata alert deliver` once), in order per alert,
            with retries. A webhook gets a POST of the notification's JSON with the id as
            Idempotency-Key; a command gets the JSON on stdin. See docs/cli.md for the payload and
            the --when grammar.
            """),
        subcommands: [Add.self, List.self, Remove.self, Test.self, Deliver.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add an alert to a source.",
            discussion: reflowed(
                """
                Examples:
                  strata alert add cars cheaper --on changed --field price --when 'price < old.price' --webhook http://127.0.0.1:9000/hook
                  strata alert add cars toyotas --on added --when 'make = "Toyota" and price < 10000' --exec 'notify-send "$STRATA_ITEM"'
                  strata alert add cars anything --webhook https://hooks.example.com/strata
                """))
        @OptionGroup var location: StoreLocation
        @Argument(help: "The source.") var source: String
        @Argument(help: "The alert's name (letters, digits, '.', '_', '-').") var name: String
        @Option(help: ArgumentHelp("Change kinds: added, changed, removed, reappeared (comma-separated; default all).", valueName: "kinds"))
        var on: [String] = []
        @Option(help: ArgumentHelp("Fire only for changes touching this field (repeatable; price, owner.name or /owner/name).", valueName: "path"))
        var field: [String] = []
        @Option(help: ArgumentHelp("A condition over the item (`price < 10000`) and the item before the change (`old.price`).", valueName: "expr"))
        var when: String?
        @Option(help: ArgumentHelp("POST each notification's JSON to this URL.", valueName: "url")) var webhook: String?
        @Option(help: ArgumentHelp("Run this shell command with the JSON on stdin.", valueName: "command")) var exec: String?

        func validate() throws {
            guard (webhook == nil) != (exec == nil) else { throw ValidationError("give exactly one of --webhook URL or --exec COMMAND") }
            if let webhook {
                guard let url = URL(string: webhook), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                    throw ValidationError("--webhook must be an http:// or https:// URL: \(webhook)")
                }
            }
            if let when {
                do { _ = try ItemExpression(parsing: when) } catch { throw ValidationError("--when \(when.debugDescription) is not valid \(error)") }
            }
        }

        func run() async throws {
            try await reportingErrors {
                let target: AlertTarget = if let webhook, let url = URL(string: webhook) { .webhook(url) } else { .exec(exec ?? "") }
                let alert = try await location.app().useCases.alerts.add(
                    ManageAlerts.Draft(
                        source: source, name: name, kinds: on.flatMap { $0.split(separator: ",").map(String.init) }, fields: field, condition: when,
                        target: target))
                emit("added alert \(alert.key): \(AlertCommand.describe(alert))")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List alerts with their pending, delivered and failed notifications.")
        @OptionGroup var location: StoreLocation
        @Argument(help: "Only this source's alerts.") var source: String?
        @Option(help: "table, json or ndjson.") var format: OutputFormat = .table

        func run() async throws {
            try await reportingErrors {
                let alerts = try await location.app().useCases.alerts.list(source: source)
                switch format {
                case .json, .ndjson: emit(alerts.map(\.json), as: format)
                case .table:
                    if alerts.isEmpty { emit("no alerts; add one with `strata alert add SOURCE NAME --webhook URL`"); return }
                    var t = TextTable(headers: ["SOURCE", "NAME", "PENDING", "DELIVERED", "FAILED", "FIRES ON", "TARGET"])
                    for a in alerts {
                        t.rows.append([
                            a.alert.source, a.alert.name, String(a.pending), String(a.delivered), String(a.failed),
                            AlertCommand.describe(a.alert, target: false),
                            AlertCommand.target(a.alert.target)
                        ])
                    }
                    emit(t.render())
                }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Remove an alert (its notifications not yet delivered are cancelled; its history stays in the log).")
        @OptionGroup var location: StoreLocation
        @Argument var source: String
        @Argument var name: String

        func run() async throws {
            try await reportingErrors {
                try await location.app().useCases.alerts.remove(source: source, name: name)
                emit("removed alert \(source)/\(name)")
            }
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test", abstract: "Send a sample notification to an alert's receiver (nothing is queued). Exits 1 if it was not delivered.")
        @OptionGroup var location: StoreLocation
        @Argument var source: String
        @Argument var name: String

        func run() async throws {
            try await reportingErrors {
                let (notification, outcome) = try await location.app().useCases.alerts.test(source: source, name: name)
                switch outcome {
                case .delivered(let status):
                    emit("delivered a sample notification \(notification.id)" + (status.map { " (HTTP \($0))" } ?? ""))
                case .retry(let why, _), .refused(let why, _):
                    throw CLIError("the sample notification was not delivered: \(why)", exit: ExitCode.failure)
                }
            }
        }
    }

    struct Deliver: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "deliver",
            abstract: "Queue notifications for changes not matched yet, then try each pending one once (for cron; `watch` does this itself).",
            discussion: "Exits 1 when a notification is still pending or failed for good after the attempt.")
        @OptionGroup var location: StoreLocation

        func run() async throws {
            try await reportingErrors {
                let app = try await location.app()
                let queued = try await app.useCases.notify()
                var retry = app.useCases.deliver
                retry.ignoresRetryDelay = true
                let round = try await retry.round()
                var delivered = 0
                var problems = 0
                for a in round.attempts {
                    switch a.outcome {
                    case .delivered: delivered += 1
                    case .retry(let why, _), .refused(let why, _):
                        problems += 1
                        FileHandle.standardError.write(Data("notification \(a.notification.id) (\(a.notification.alert)): \(why)\n".utf8))
                    }
                }
                let left = try await app.useCases.alerts.list().reduce(0) { $0 + $1.pending }
                emit("queued \(queued), delivered \(delivered), not delivered \(problems), pending \(left)")
                if problems > 0 || left > 0 { throw ExitCode.failure }
            }
        }
    }

    static func target(_ t: AlertTarget) -> String {
        switch t {
        case .webhook(let url): url.absoluteString
        case .exec(let command): "exec: " + command
        }
    }

    static func describe(_ a: Alert, target showTarget: Bool = true) -> String {
        var parts: [String] = [
            a.kinds.count == ChangeKind.allCases.count
                ? "any change" : ChangeKind.allCases.filter { a.kinds.contains($0) }.map(\.rawValue).joined(separator: ",")
        ]
        if !a.fields.isEmpty { parts.append("of " + a.fields.joined(separator: ",")) }
        if let c = a.condition { parts.append("when " + c.text) }
        if showTarget { parts.append("→ " + target(a.target)) }
        return parts.joined(separator: " ")
    }
}
