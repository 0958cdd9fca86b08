import StrataDomain
import StrataPresentation

// The command line's words for what the layers below leave typed: the flags that set a source's
// fields, the flags of the read commands, and the way out of a problem as a command to type.
// Nothing below this executable names a flag or a command.

extension FilterInputNames {
    /// The command line's flags.
    static let flags = FilterInputNames(
        where_: "--where", sort: "--sort", limit: "--limit", offset: "--offset", asOf: "--as-of", from: "--from", to: "--to",
        quoting: { "\($0) '\($1)'" })
}

extension SourceSpec.Field {
    /// The flag of `source add` and `source change` that sets the field.
    var flag: String {
        switch self {
        case .name: "NAME"
        case .url: "--url"
        case .detailURL: "--detail-url"
        case .detailURLField: "--detail-url-field"
        case .createURL: "--create-url"
        case .updateURL: "--update-url"
        case .deleteURL: "--delete-url"
        case .details: "--watch-details"
        default: "--" + rawValue.reduce(into: "") { s, c in c.isUppercase ? s += "-" + c.lowercased() : s.append(c) }
        }
    }

    /// A value to show in an example command.
    var example: String {
        switch self {
        case .url, .detailURL, .createURL, .updateURL, .deleteURL: "URL"
        case .every: "15m"
        case .keep: "30d"
        case .header: "'NAME: VALUE'"
        default: "VALUE"
        }
    }
}

extension NextStep {
    /// The way out as a command to type, or what to change in the command given.
    var cli: String {
        switch self {
        case .listSources: "see `strata source list`"
        case .defineSource: "define one with `strata source add`"
        case .replaceSource: "use --replace to change it"
        case .changeSource(let source, let field):
            "give \(source == nil ? "one" : field == .every ? "it one" : "it \(field.flag)") with `strata source change \(source ?? "NAME") \(field.flag) \(field.example)`"
        case .checkField(let field): "check \(field.flag)"
        case .showSource(let source): "see its definition with `strata source show \(source)`"
        case .keepSecretOut(let name):
            "pass a template in single quotes so the shell leaves it alone, e.g. --header '\(name): Bearer $TOKEN' (read from the environment at each fetch), "
                + "or read it from a file with --header-from-file '\(name)=PATH', or keep the literal outside the log with --allow-literal-secret"
        case .giveSecretAgain(let source, let header):
            "give it again with `strata source change \(source) --header '\(header): VALUE' --allow-literal-secret`"
        case .readRecorded: "read it with `strata serve` or `strata log`"
        case .fetch(let source): "run `strata fetch \(source)`"
        case .listItems(let source): "list ids with `strata list \(source)`"
        case .readLog: "see `strata log`"
        case .changeRetention(let source, let from):
            "read from seq \(from) on, or change the retention with `strata source change \(source) --keep`"
        case .listAlerts: "see `strata alert list`"
        case .removeAlert(let source, let name): "remove it first with `strata alert remove \(source) \(name)`"
        case .listWrites: "see `strata outbox --all`"
        case .settleWrite(let source, let write): "`strata outbox \(source)` shows both sides; `strata outbox retry|drop \(write)` decides"
        case .indexFields(let source, let fields): "`strata source change \(source) --index \(fields.joined(separator: ","))` would use an index"
        case .showDiff(let source, let from, let to): "strata diff \(source) --from \(from) --to \(to)"
        case .stageEdit(let session): "stage an edit with `strata edit SOURCE ID --session \(session) --set …`"
        case .setUser: "set yours first with `strata config set user NAME`"
        case .checkGitImport: "check --path (relative to the repository) and the range"
        case .verifyStore: "run `strata verify`"
        case .giveStoreKey: "give its key file with STRATA_KEY_FILE=FILE or --key-file FILE"
        case .dropStoreKey: "unset STRATA_KEY_FILE, or encrypt the store with `strata rekey --new-key-file FILE` (with STRATA_KEY_FILE unset)"
        case .makeStoreKey(let file): "make one with `strata key generate \(file)`"
        case .installRedactionKey:
            "install the team's key with `strata key redaction install FILE` (a node that has it writes it with `strata key redaction export FILE`)"
        case .rotateRedactionKey: "install the team's key, or change keys for everyone with `strata key redaction rotate --new-key-file FILE`"
        case .addRemote(let name): "add one with `strata remote add \(name ?? "NAME") postgres://USER@HOST/DB`"
        case .removeRemote(let name): "remove it first with `strata remote remove \(name)`"
        case .takeOverLease: "wait for it to expire, or take it over with --force"
        case .allowMoreTime: "retry later or raise --timeout"
        case .allowLargerBody: "raise --max-bytes if that is expected"
        }
    }
}

extension FrontEndWording {
    /// The command line's words (the terminal browser, started from it, speaks them too).
    static let cli = FrontEndWording(inputs: .flags, field: \.flag, next: \.cli)
}

extension RepositoryError {
    /// The message with its way out, as the CLI says them.
    var cliMessage: String { FrontEndWording.cli.sentence(message, next) }
}
