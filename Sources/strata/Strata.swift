import ArgumentParser
import CLibraryLoader
import Foundation
import Logging
import StrataApp
import StrataDomain
import StrataPresentation
import Synchronization

@main
struct Strata: AsyncParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Mirror a JSON collection API into a local, time-travelling event store.",
        discussion: reflowed(
            """
            Every fetch is an immutable event in an LMDB log; projections fold the log into tables you
            can read now or as of any event or date.

            Exit codes: 0 success, 1 error, 2 verification failed, 3 not found, 4 the store's key is
            missing or wrong, 5 the team log refused a push (another node holds the source's lease),
            64 bad usage.
            """),
        version: version,
        subcommands: [
            SourceCommand.self, FetchCommand.self, ImportCommand.self,
            ExportCommand.self, BrowseCommand.self, ServeCommand.self, ProxyCommand.self, BisectCommand.self, WatchCommand.self, AlertCommand.self,
            ListCommand.self, CountCommand.self, ChangesCommand.self, ShowCommand.self,
            HistoryCommand.self,
            DiffCommand.self, SchemaCommand.self,
            DemoCommand.self
        ],
        groupedSubcommands: [
            CommandGroup(
                name: "Writing back",
                subcommands: [
                    ConfigCommand.self, CreateCommand.self, EditCommand.self, DeleteCommand.self, SessionCommand.self, PushCommand.self, OutboxCommand.self
                ]),
            CommandGroup(name: "Team log", subcommands: [RemoteCommand.self]),
            CommandGroup(
                name: "Store",
                subcommands: [
                    InitCommand.self, KeyCommand.self, RekeyCommand.self, VerifyCommand.self, RebuildCommand.self, CompactCommand.self, StatsCommand.self,
                    ForgetCommand.self
                ]),
            CommandGroup(
                name: "Engine tools",
                subcommands: [
                    LogCommand.self, DocCommand.self, RecordCommand.self, BenchCommand.self
                ])
        ]
    )

    /// Accepts the global options `--store PATH` and `--verbose` before the subcommand too
    /// (`strata --store /tmp/s log`) by moving them after it, where each command declares them.
    static func main() async {
        let args = protectingDashIDs(FetchCommand.rewritingDetails(hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst()))))
        if let unknown = unknownCommand(args) {
            FileHandle.standardError.write(Data("Error: \(unknown)\n".utf8))
            exit(withError: ExitCode.validationFailure)
        }
        if let leaf = leafCommand(args), let command = try? parseLeaf(leaf.command, Array(args.dropFirst(leaf.depth))) {
            await runParsed(command)
        } else {
            // The root's own `main`, with the same wait for libraries before the exit.
            let command: any ParsableCommand
            do { command = try parseAsRoot(args) } catch { exit(withError: error) }
            await runParsed(command)
        }
    }

    /// The command a command line names when it is a leaf (a command without subcommands: `list`,
    /// `source add`) and asks for no help, version or completion, with the number of words that
    /// name it. Such a line is parsed by the leaf alone: parsing from the root builds the whole
    /// tree of commands and the root's own arguments first, about a millisecond of every start.
    /// Anything the leaf does not parse goes through the root, so errors and usage read as before.
    static func leafCommand(_ args: [String]) -> (command: any ParsableCommand.Type, depth: Int)? {
        let path = commandPath(args)
        guard path.depth > 0, path.command.configuration.subcommands.isEmpty,
            !args.contains(where: { $0 == "-h" || $0 == "--help" || $0 == "--version" || $0.hasPrefix("---") || $0.hasPrefix("--experimental") })
        else { return nil }
        return path
    }

    static func parseLeaf<C: ParsableCommand>(_ type: C.Type, _ args: [String]) throws -> any ParsableCommand {
        try C.parse(args)
    }

    /// Runs a parsed command as the root's `main` does, with errors reported the same way. Before
    /// the process exits, libraries still loading on another thread (a fetch loads libcurl while
    /// it reads the store) finish: exiting in the middle of a library's initialization crashes.
    static func runParsed(_ command: any ParsableCommand) async {
        do {
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                var synchronous = command
                try synchronous.run()
            }
        } catch {
            strata_library_settle_all()
            exit(withError: error)
        }
        strata_library_settle_all()
    }

    /// The command named by the first words of `args` (subcommand names from the root down), and
    /// how many words name it.
    /// What to say when a command line names a command that does not exist where a command is
    /// expected (`strata lsit cars`): the closest names, or where the list is. Nil for a known one.
    static func unknownCommand(_ args: [String]) -> String? {
        let path = commandPath(args)
        let subcommands = path.command.configuration.subcommands
        // A command with a default subcommand takes that one's arguments (`strata outbox notes`).
        guard path.depth < args.count, !subcommands.isEmpty, path.command.configuration.defaultSubcommand == nil else { return nil }
        let word = args[path.depth]
        guard !word.hasPrefix("-"), word != "help" else { return nil }
        let prefix = (["strata"] + args.prefix(path.depth)).joined(separator: " ")
        let names = subcommands.flatMap { [$0._commandName] + $0.configuration.aliases }
        let close = names.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= max(1, min(2, word.count / 2)) }.sorted { $0.1 < $1.1 }
        guard let best = close.first?.1 else { return "`\(prefix) \(word)` is not a command; see `\(prefix) --help` for the list" }
        let choices = close.filter { $0.1 == best }.map { "`\(prefix) \($0.0)`" }
        return "`\(prefix) \(word)` is not a command; did you mean \(choices.joined(separator: " or "))?"
    }

    /// Edits (insertions, deletions, substitutions and swaps of two neighbours) from `a` to `b`.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let x = Array(a.lowercased()), y = Array(b.lowercased())
        guard !x.isEmpty, !y.isEmpty else { return max(x.count, y.count) }
        var d = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { d[i][0] = i }
        for j in 0...y.count { d[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1))
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[x.count][y.count]
    }

    /// Whether the command line's command may create the store it names: one that defines or
    /// records something, or pulls a team's history; every other command only reads a store
    /// that exists.
    static var commandCreatesStores: Bool {
        let args = hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst()))
        let names = args.prefix(commandPath(args).depth)
        let line = names.joined(separator: " ")
        let creating: Set<String> = [
            "source add", "init", "record", "remote add", "remote pull", "remote sync", "import", "proxy", "demo", "bench", "config set",
            "key redaction install"
        ]
        // A server that captures what it never recorded (`serve --on-miss`) records into a source.
        return creating.contains(line) || (line == "serve" && args.contains { $0.hasPrefix("--on-miss") }) || names.first?.hasPrefix("_") == true
    }

    static func commandPath(_ args: [String]) -> (command: any ParsableCommand.Type, depth: Int) {
        var command: any ParsableCommand.Type = Strata.self
        var depth = 0
        while depth < args.count,
            let sub = command.configuration.subcommands.first(where: { $0.configuration.commandName == args[depth] || $0._commandName == args[depth] })
        {
            command = sub
            depth += 1
        }
        return (command, depth)
    }

    /// Ids that start with a dash (Firebase push ids: `-N6JWiv7KXjw8LYkx9MZ`) in a positional
    /// place (right after the source name or another such id) are moved after a `--`, so
    /// `strata edit notes -N6J… --set a=b` parses as written. Anything after an explicit `--`
    /// is left alone.
    static func protectingDashIDs(_ args: [String]) -> [String] {
        guard !args.contains("--") else { return args }
        var kept: [String] = [], ids: [String] = []
        var previousPositional = false
        for (i, a) in args.enumerated() {
            let looksLikeID =
                a.count >= 6 && a.hasPrefix("-") && !a.hasPrefix("--")
                && a.dropFirst().allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
            if looksLikeID && previousPositional && i >= 2 {
                ids.append(a)
                continue
            }
            kept.append(a)
            previousPositional = !a.hasPrefix("-") && !(kept.dropLast().last?.hasPrefix("--") ?? false)
        }
        return ids.isEmpty ? args : kept + ["--"] + ids
    }

    static func hoistingGlobalOptions(_ args: [String]) -> [String] {
        var globals: [String] = []
        var rest = args[...]
        while let first = rest.first, first.hasPrefix("-") {
            if first == "--store" || first == "--key-file", rest.count >= 2 {
                globals += rest.prefix(2); rest = rest.dropFirst(2)
            } else if first.hasPrefix("--store=") || first.hasPrefix("--key-file=") || first == "--verbose" || first == "-v" {
                globals.append(first); rest = rest.dropFirst()
            } else {
                break
            }
        }
        guard !globals.isEmpty, rest.first.map({ !$0.hasPrefix("-") }) == true else { return args }
        // Insert after the subcommand path (e.g. `doc list`).
        let depth = commandPath(Array(rest)).depth
        return rest.prefix(depth) + globals + rest.dropFirst(depth)
    }
}

/// Exit codes other than ArgumentParser's own (0, 1, 64).
enum ExitCodes {
    static let verificationFailed = ExitCode(2)
    static let notFound = ExitCode(3)
    /// The store is encrypted and its key was not given, or another key was.
    static let keyProblem = ExitCode(4)
    /// The team log refused: a source's lease is held by another node (or a newer token).
    static let fenced = ExitCode(5)
}

/// Options every store command takes.
struct StoreLocation: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The store directory (also STRATA_STORE).", valueName: "path"))
    var store: String?

    @Flag(name: .shortAndLong, help: "Log debug details to stderr.")
    var verbose = false

    @Option(name: .customLong("key-file"), help: ArgumentHelp("The encrypted store's key file (also STRATA_KEY_FILE): 32 bytes, mode 0600.", valueName: "file"))
    var keyFile: String?

    /// `--key-file`, else `$STRATA_KEY_FILE`; nil for a store without encryption.
    var keyPath: String? {
        if let keyFile, !keyFile.isEmpty { return keyFile }
        if let k = environmentValue("STRATA_KEY_FILE"), !k.isEmpty { return k }
        return nil
    }

    /// Whether ``path`` is the default one (neither `--store` nor `$STRATA_STORE` given).
    var isDefaultPath: Bool {
        (store ?? "").isEmpty && (environmentValue("STRATA_STORE") ?? "").isEmpty
    }

    /// `--store`, else `$STRATA_STORE`, else `$XDG_DATA_HOME/strata`, else `~/.local/share/strata`.
    var path: String {
        if let store, !store.isEmpty { return store }
        if let s = environmentValue("STRATA_STORE"), !s.isEmpty { return s }
        if let x = environmentValue("XDG_DATA_HOME"), !x.isEmpty { return x + "/strata" }
        return NSHomeDirectory() + "/.local/share/strata"
    }

    func logger() -> Logger {
        var logger = Logger(label: "strata") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = verbose ? .debug : .warning
        return logger
    }

    /// The store at ``path`` under ``keyPath``'s key, to open or maintain through the app.
    var access: StoreAccess {
        StoreAccess(path: path, keyFile: keyPath, durability: environmentValue("STRATA_DURABILITY"), logger: logger())
    }
}

/// An error rendered as one line that says what to do; the exit code says what kind.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    var exit: ExitCode = .failure

    init(_ message: String, exit: ExitCode = .failure) {
        description = message
        self.exit = exit
    }

    /// The one mapping of errors to what the CLI says and its exit code: a missing or wrong key
    /// exits 4; a repository's or a presentable error by its kind (not found 3, invalid input 64,
    /// a refusal by another node 5).
    init(_ error: any Error) {
        switch error {
        case let e as CLIError: self = e
        case let e as PresentableError: self = e.cli
        case let e as RepositoryError where e.code == .key: self = CLIError(e.cliMessage, exit: ExitCodes.keyProblem)
        case let e as RepositoryError: self = PresentableError(e).cli
        case let e as SpecProblem: self = PresentableError(e).cli
        default: self = CLIError("\(error)")
        }
    }
}

/// The store a command opened when it was the default one, so that what it did not find names
/// where it looked.
enum StoreNote {
    static let defaultPath = Mutex<String?>(nil)

    /// `e`'s message, naming the default store when something was not found in it.
    static func message(_ e: CLIError) -> String {
        guard e.exit == ExitCodes.notFound, let path = defaultPath.withLock({ $0 }), !e.description.contains(path) else { return e.description }
        return e.description + " (in the store at \(path); set STRATA_STORE or --store for another)"
    }
}

/// Runs a command body, printing errors as `Error: …` on stderr with a meaningful exit code.
/// Something not found in the default store says which store that was.
func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let e as CLIError {
        FileHandle.standardError.write(Data("Error: \(StoreNote.message(e))\n".utf8))
        throw e.exit
    } catch let e as ExitCode {
        throw e
    } catch let e as ValidationError {
        throw e
    } catch {
        let e = CLIError(error)
        FileHandle.standardError.write(Data("Error: \(StoreNote.message(e))\n".utf8))
        throw e.exit
    }
}
