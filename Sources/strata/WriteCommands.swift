import ArgumentParser
import ChildProcess
import Foundation
import StrataApp
import StrataDomain
import StrataJSON
import StrataPresentation

/// Runs a use case, turning its errors into CLI errors with exit codes by kind.
func useCase<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch let e as CLIError { throw e } catch { throw PresentableError(error).cli }
}

/// `PATH=VALUE` (``ItemEdit/assignment(_:what:)``), a usage error when it is not.
func parseAssignment(_ text: String, flag: String) throws -> (path: String, value: JSONValue) {
    do { return try ItemEdit.assignment(text, what: flag) } catch let e as RepositoryError { throw ValidationError(e.cliMessage) }
}

/// Reads a JSON file, or stdin for `-`.
func readJSON(_ path: String, flag: String) throws -> JSONValue {
    let data: Data
    if path == "-" {
        data = FileHandle.standardInput.readDataToEndOfFile()
    } else {
        guard let d = FileManager.default.contents(atPath: path) else { throw CLIError("\(flag): cannot read \(path)", exit: ExitCode.validationFailure) }
        data = d
    }
    do { return try JSONValue(parsing: [UInt8](data)) } catch { throw CLIError("\(flag) \(path): \(error)", exit: ExitCode.validationFailure) }
}

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Settings of this store (each change an event): user, who local writes are signed by.",
        subcommands: [Set.self, Get.self, List.self]
    )

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Set a setting.", discussion: "Example: strata config set user alice")
        @OptionGroup var location: StoreLocation
        @Argument(help: "The setting (user).") var key: String
        @Argument var value: String
        func run() async throws {
            try await reportingErrors {
                try await useCase { try await location.app().useCases.config.set(key, value) }
                emit("\(key) = \(value)")
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a setting (exit 3 when unset).")
        @OptionGroup var location: StoreLocation
        @Argument var key: String
        func run() async throws {
            try await reportingErrors {
                guard let v = try await useCase({ try await location.app().useCases.config.get(key) }) else {
                    throw CLIError("\(key) is not set; set it with `strata config set \(key) VALUE`", exit: ExitCodes.notFound)
                }
                emit(v)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Print every setting.")
        @OptionGroup var location: StoreLocation
        func run() async throws {
            try await reportingErrors {
                for (k, v) in try await useCase({ try await location.app().useCases.config.all() }) { emit("\(k) = \(v)") }
            }
        }
    }
}

struct CreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create an item here; it shows at once (pending) and `strata push` sends it.",
        discussion: reflowed(
            """
            The source needs --create-url. Its --owner-field is filled with your user unless set.

            Examples:
              strata create notes --set content="buy milk" --set create_date=2026-11-25T10:00:00Z
              echo '{"content":"call Bob"}' | strata create notes --json -
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source name.") var name: String
    @Option(help: ArgumentHelp("The new item, a JSON object (- for stdin).", valueName: "file")) var json: String?
    @Option(
        name: .customLong("set"), help: ArgumentHelp("A field of the new item (repeatable); VALUE is JSON when it parses, else text.", valueName: "path=value"))
    var sets: [String] = []
    @Option(help: "table or json.") var format: OutputFormat = .table

    func validate() throws {
        if json == nil && sets.isEmpty { throw ValidationError("give the new item with --json FILE or --set PATH=VALUE") }
        for s in sets { _ = try parseAssignment(s, flag: "--set") }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            var doc = try json.map { try readJSON($0, flag: "--json") } ?? .object([:])
            doc = try await useCase { try ItemEdit(sets: try sets.map { try parseAssignment($0, flag: "--set") }).applied(to: doc) }
            let document = doc
            let (seq, id) = try await useCase { try await app.useCases.write.create(source: name, document: document) }
            if format == .json { emit([JSONValue(created: id, seq: seq)], as: .json); return }
            emit("created \(name)/\(id) (seq \(seq), pending; `strata push \(name)` sends it)")
        }
    }
}

struct EditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Edit an item here (or stage the edit in a session); `strata push` sends it.",
        discussion: reflowed(
            """
            The change is the difference between the item now and after the edit, recorded as an
            RFC 6902 patch with old values. With no --set, --unset or --patch, the item opens in
            $VISUAL or $EDITOR (vi), and what you save becomes the change.
            With --session S the edit is only staged: `strata session show|accept|cancel S`.

            Examples:
              strata edit notes -N6JWiv7KXjw8LYkx9MZ --set content="note 1, edited"
              strata edit cars 3 --set price=11500 --unset pros --session sale
              strata edit cars 3 --patch fix.json
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source name.") var name: String
    @Argument(help: "The item's id.") var id: String
    @Option(name: .customLong("set"), help: ArgumentHelp("Set a field (repeatable); VALUE is JSON when it parses, else text.", valueName: "path=value"))
    var sets: [String] = []
    @Option(name: .customLong("unset"), help: ArgumentHelp("Remove a field (repeatable).", valueName: "path")) var unsets: [String] = []
    @Option(help: ArgumentHelp("An RFC 6902 JSON Patch to apply (- for stdin).", valueName: "file")) var patch: String?
    @Option(help: ArgumentHelp("Stage the edit in this session instead of writing it.", valueName: "name")) var session: String?
    @Option(help: "table or json.") var format: OutputFormat = .table

    func validate() throws {
        for s in sets { _ = try parseAssignment(s, flag: "--set") }
        if let session, session.isEmpty || session.contains("/") { throw ValidationError("--session must be a name without '/'") }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            var edit = ItemEdit(
                sets: try sets.map { try parseAssignment($0, flag: "--set") }, unsets: unsets,
                patch: try patch.map { try readJSON($0, flag: "--patch") })
            if edit.isEmpty { edit.document = try await editInEditor(app) }
            let change = edit
            let (seq, changes) = try await useCase { try await app.useCases.write.edit(source: name, id: id, change, session: session) }
            if format == .json {
                emit([JSONValue(edit: seq, staged: session != nil && seq != nil, changes: changes)], as: .json)
                return
            }
            guard let seq else {
                emit("no change: \(name)/\(id) already looks like that; nothing was written")
                return
            }
            let what = session.map { "staged in session \($0)" } ?? "pending; `strata push \(name)` sends it"
            emit("edited \(name)/\(id) (seq \(seq), \(what))")
            let options = RenderOptions(width: 100, color: false, wording: .cli)
            for c in changes { emit(options.changeLine(ChangeViewData(change: c))) }
        }
    }

    /// Opens the item's document in the user's editor; returns what was saved.
    private func editInEditor(_ app: StrataApp) async throws -> JSONValue {
        let item = try await useCase { try await app.useCases.loadDetail(source: name, id: id, offline: true).item }
        let path = NSTemporaryDirectory() + "strata-edit-\(ProcessInfo.processInfo.processIdentifier).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let before = item.document.prettyString + "\n"
        try Data(before.utf8).write(to: URL(fileURLWithPath: path))
        let env = ProcessInfo.processInfo.environment
        let editor = env["VISUAL"].flatMap { $0.isEmpty ? nil : $0 } ?? env["EDITOR"].flatMap { $0.isEmpty ? nil : $0 } ?? "vi"
        // `sh -c 'EDITOR "$1"' strata PATH`: the editor setting may carry its own arguments.
        let exit: ChildProcessRunner.Exit
        do { exit = try await ChildProcessRunner().interactive(.shell("\(editor) \"$1\""), arguments: [path]) } catch {
            throw CLIError("cannot start the editor (\(editor)): \(error); set VISUAL or EDITOR")
        }
        guard exit.succeeded else { throw CLIError("the editor (\(editor)) \(exit); nothing was changed") }
        return try readJSON(path, flag: "the edited item")
    }
}

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete items here (they disappear at once); `strata push` sends the deletes.",
        discussion: "Example: strata delete catalog 1003 1004"
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source name.") var name: String
    @Argument(help: "The items' ids.") var ids: [String]

    func validate() throws { if ids.isEmpty { throw ValidationError("name at least one item id") } }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            let seqs = try await useCase { try await app.useCases.write.delete(source: name, ids: ids) }
            emit(
                "deleted \(ids.count) item\(ids.count == 1 ? "" : "s") of \(name) (seq \(seqs.map(String.init).joined(separator: ", ")), pending; `strata push \(name)` sends \(ids.count == 1 ? "it" : "them"))"
            )
        }
    }
}

struct SessionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session",
        abstract: "Edit sessions: edits staged with `edit --session S`, accepted or cancelled as one.",
        subcommands: [Show.self, Accept.self, Cancel.self, List.self]
    )

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Show a session's combined patch per item.")
        @OptionGroup var location: StoreLocation
        @Argument var session: String
        @Option(help: "table or json.") var format: OutputFormat = .table
        func run() async throws {
            try await reportingErrors {
                let s = try await useCase { try await location.app().useCases.write.session(session) }
                if format != .table {
                    emit([JSONValue(session: s)], as: .json)
                    return
                }
                let changes = s.items.reduce(0) { $0 + $1.changes.count }
                emit(
                    "session \(s.name) · \(s.state.rawValue) · \(changes) change\(changes == 1 ? "" : "s") in \(s.items.count) item\(s.items.count == 1 ? "" : "s")"
                )
                let options = RenderOptions(width: 100, color: false, wording: .cli)
                for i in s.items {
                    emit("\(i.source)/\(i.itemID)  (\(i.edits) edit\(i.edits == 1 ? "" : "s"))")
                    for c in i.changes { emit(options.changeLine(ChangeViewData(change: c))) }
                }
                if s.state == .open { emit("[a]ccept: strata session accept \(s.name)   [c]ancel: strata session cancel \(s.name)") }
            }
        }
    }

    struct Accept: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "accept", abstract: "Accept a session: one patch per item, all in one atomic batch.")
        @OptionGroup var location: StoreLocation
        @Argument var session: String
        func run() async throws {
            try await reportingErrors {
                let seqs = try await useCase { try await location.app().useCases.write.accept(session) }
                emit(
                    "accepted session \(session): \(seqs.count) patch\(seqs.count == 1 ? "" : "es") (seq \(seqs.map(String.init).joined(separator: ", ")), pending; `strata push` sends them)"
                )
            }
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cancel", abstract: "Cancel a session: its edits never reach the items (the cancellation is logged).")
        @OptionGroup var location: StoreLocation
        @Argument var session: String
        func run() async throws {
            try await reportingErrors {
                let n = try await useCase { try await location.app().useCases.write.cancel(session) }
                emit("cancelled session \(session) (\(n) staged edit\(n == 1 ? "" : "s") discarded)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List sessions.")
        @OptionGroup var location: StoreLocation
        func run() async throws {
            try await reportingErrors {
                let sessions = try await useCase { try await location.app().useCases.write.sessions() }
                if sessions.isEmpty { emit("no sessions; stage an edit with `strata edit SOURCE ID --session NAME --set …`"); return }
                var t = TextTable(headers: ["SESSION", "STATE", "ITEMS", "CHANGES"])
                for s in sessions { t.rows.append([s.name, s.state.rawValue, String(s.items.count), String(s.items.reduce(0) { $0 + $1.changes.count })]) }
                emit(t.render())
            }
        }
    }
}

struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send the outbox to the API, in order; every attempt and answer is an event.",
        discussion: reflowed(
            """
            Updates carry If-Match with the ETag of the version they were made on; every request
            carries an Idempotency-Key (the write's event id), so a write sent twice (after a crash or
            a lost answer) takes effect once. A 412 on a field the write does not touch is rebased and
            sent again; a real conflict is kept on both sides (`strata outbox`).

            Exit codes: 0 every write acknowledged; 1 some are still pending (offline, server
            errors), rejected or conflicted; 3 unknown source.
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "Sources to push (default: every source with open writes).") var names: [String] = []
    @Option(help: "Writes in flight at once (writes to one item always go in order).") var concurrency = 1
    @Option(help: "Seconds allowed per request.") var timeout: Double = 30
    @Option(help: "table or json.") var format: OutputFormat = .table

    func validate() throws {
        guard (1...64).contains(concurrency) else { throw ValidationError("--concurrency must be 1–64") }
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be more than 0 and at most 86400 seconds") }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app {
                $0.push.timeout = timeout; $0.requestsSoon = true
            }
            let reports = try await useCase { try await app.useCases.push(names, concurrency: concurrency) }
            if format != .table {
                emit(reports.map(JSONValue.init(push:)), as: .json)
            } else {
                if reports.isEmpty { emit("nothing to push: the outbox is empty") }
                for r in reports {
                    let n = r.outcomes.count
                    let rate = r.seconds > 0 ? String(format: ", %.0f writes/s", Double(n) / r.seconds) : ""
                    emit(
                        "\(r.source): \(r.count(.acknowledged)) acknowledged, \(r.count(.rejected)) rejected, \(r.count(.conflicted)) conflicted, \(r.count(.failed)) failed; \(r.left) left in the outbox (\(String(format: "%.2f", r.seconds)) s\(rate))"
                    )
                    for o in r.outcomes where o.result != .acknowledged {
                        emit("  write \(o.write) (\(o.kind.rawValue) \(o.itemID)): \(o.result.rawValue)\(o.status.map { " \($0)" } ?? ""): \(o.message)")
                    }
                    if r.outcomes.contains(where: { $0.result == .conflicted }) {
                        emit("  see both sides with `strata outbox \(r.source)`; then `strata outbox retry ID` (yours wins) or `drop ID`")
                    }
                }
            }
            if let offline = reports.compactMap(\.offline).first {
                throw CLIError("the API could not be reached (\(offline)); the writes stay pending: run `strata push` again later")
            }
            if reports.contains(where: { $0.left > 0 || $0.outcomes.contains { $0.result != .acknowledged } }) { throw ExitCode.failure }
        }
    }
}

struct OutboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox",
        abstract: "Local writes and where they are: pending, sent, acknowledged, rejected, conflicted.",
        discussion: reflowed(
            """
            Examples:
              strata outbox                 # open writes (pending, sent, conflicted)
              strata outbox notes --all     # every write of notes, newest first
              strata outbox retry 42        # a rejected or conflicted write goes again (yours wins)
              strata outbox drop 42         # takes the write back out of the items
            """),
        subcommands: [Show.self, Retry.self, Drop.self],
        defaultSubcommand: Show.self
    )

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List writes (open ones unless --all).")
        @OptionGroup var location: StoreLocation
        @Argument(help: "Only this source.") var name: String?
        @Flag(help: "Settled writes too, newest first.") var all = false
        @Option(help: "table, json or ndjson.") var format: OutputFormat = .table
        func run() async throws {
            try await reportingErrors {
                let writes = try await useCase { try await location.app().useCases.push.outbox(source: name, all: all) }
                if format != .table { emit(writes.map(JSONValue.init(write:)), as: format); return }
                if writes.isEmpty { emit(all ? "no local writes" : "the outbox is empty (see settled writes with --all)"); return }
                var t = TextTable(headers: ["WRITE", "KIND", "ITEM", "BY", "STATE", "TRIES", "CHANGES"])
                for w in writes {
                    let item = w.serverID.map { "\(w.source)/\($0)" } ?? "\(w.source)/\(w.itemID)"
                    let changes = w.kind == .patch ? w.changes.map(\.path).joined(separator: " ") : w.kind == .create ? "(new)" : "(delete)"
                    t.rows.append([String(w.seq), w.kind.rawValue, item, w.user, w.answer, String(w.attempts), changes])
                }
                emit(t.render())
                for w in writes where w.state == .conflicted {
                    emit("write \(w.seq) conflicts on \(w.conflictPaths.map { $0.isEmpty ? "the item" : $0 }.joined(separator: ", ")):")
                    for p in w.conflictPaths {
                        let mine = w.localDocument?.value(atPointer: p)
                        emit(
                            "  \(p.isEmpty ? "/" : p)  server: \(w.serverDocument?.value(atPointer: p)?.displayText ?? "(none)")  yours: \(mine?.displayText ?? "(none)")"
                        )
                    }
                }
            }
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "retry", abstract: "Put a rejected, conflicted or dropped write back in the outbox.")
        @OptionGroup var location: StoreLocation
        @Argument(help: "The write's seq (see `strata outbox`).") var write: UInt64
        func run() async throws {
            try await reportingErrors {
                let w = try await useCase { try await location.app().useCases.push.retry(write) }
                emit("write \(write) is pending again\(w.state == .conflicted ? " (sent over the server's version)" : ""); `strata push \(w.source)` sends it")
            }
        }
    }

    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "drop", abstract: "Drop a write: out of the outbox and out of the items (logged).")
        @OptionGroup var location: StoreLocation
        @Argument(help: "The write's seq (see `strata outbox`).") var write: UInt64
        func run() async throws {
            try await reportingErrors {
                let w = try await useCase { try await location.app().useCases.push.drop(write) }
                emit("dropped write \(write) (\(w.kind.rawValue) \(w.source)/\(w.itemID))")
            }
        }
    }
}
