import ArgumentParser
import Foundation
import StrataApp
import StrataDomain

// Store tools for encryption at rest: `init`, `key generate`, `rekey`, through the store's files
// (``StoreAccess/files``).

struct InitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a store, encrypted with --encrypt.",
        discussion: reflowed(
            """
            With --encrypt every stored body, document, URL, id and value derived from the data is
            sealed (AES-256-GCM) or digested (HMAC-SHA256) under the key in the key file. The key file
            (--key-file or STRATA_KEY_FILE) is created if it does not exist: 32 random bytes, mode
            0600. Keep it apart from the store (a lost laptop should not carry both) and keep a copy:
            without it the store cannot be read. Every later command needs it too.

            A store is also created, without encryption, by the first command that uses it; with
            STRATA_KEY_FILE set, that store is created encrypted.

            Examples:
              strata init --encrypt --key-file ~/.config/strata/store.key
              export STRATA_KEY_FILE=~/.config/strata/store.key
            """)
    )

    @OptionGroup var location: StoreLocation
    @Flag(help: "Encrypt the store under the key file's key.") var encrypt = false

    func run() async throws {
        try await reportingErrors {
            let path = location.path
            let files = location.access.files
            if files.exists {
                throw CLIError("a store exists at \(path); to encrypt it or change its key, run `strata rekey --new-key-file FILE`")
            }
            var created = false
            if encrypt {
                guard let keyPath = location.keyPath else {
                    throw ValidationError("--encrypt needs a key file: give --key-file FILE or set STRATA_KEY_FILE (it is created if missing)")
                }
                if !FileManager.default.fileExists(atPath: keyPath) {
                    try createKeyFile(keyPath, files)
                    created = true
                }
            } else if location.keyPath != nil {
                throw ValidationError("a key file was given without --encrypt; add --encrypt, or unset STRATA_KEY_FILE")
            }
            let app = try await location.app()
            var lines = ["created \(app.storeIsEncrypted ? "an encrypted" : "a") store at \(path)"]
            if let keyPath = location.keyPath {
                lines.append(created ? "wrote a new key to \(keyPath) (mode 0600): keep a copy apart from the store" : "encrypted under the key in \(keyPath)")
                lines.append("every command needs it: export STRATA_KEY_FILE=\(keyPath)")
            }
            emit(lines.joined(separator: "\n"))
        }
    }
}

/// Writes a new key to `path` (mode 0600, never over an existing file), creating its directory
/// (mode 0700) if needed; an error exits 1, not 4: nothing is wrong with a store's key.
func createKeyFile(_ path: String, _ files: ManageStoreFiles) throws {
    do { try files.createKey(at: path) } catch { throw CLIError(CLIError(error).description) }
}

struct KeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Make key files for encrypted stores; share the team's redaction key.",
        subcommands: [Generate.self, Redaction.self]
    )

    /// `strata key redaction`: the key placeholders are made with.
    struct Redaction: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "redaction",
            abstract: "Show, share, install or rotate the key redacted values' placeholders are made with.",
            discussion: reflowed(
                """
                A redacted value is stored as a placeholder keyed by the store's redaction key, so
                every node of a team must hold the same key for equal values to give equal
                placeholders. The history records which key it is redacted with (a check from
                which the key cannot be had); a fetch, import or push of a node holding another
                key is refused (exit 4) instead of recording every redacted value as changed. Hand
                the key around as a file, like the encryption key: never in the log or any output.

                Examples:
                  strata key redaction                                # this store's key and the history's
                  strata key redaction export ~/team/redaction.key    # on the node that has the team's key
                  strata key redaction install ~/team/redaction.key   # on every other node, before fetching
                  strata key redaction rotate                         # a new key for everyone from here on
                """),
            subcommands: [Show.self, Export.self, Install.self, Rotate.self],
            defaultSubcommand: Show.self
        )

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "show", abstract: "This store's key and the key the history records (checks only).")
            @OptionGroup var location: StoreLocation

            func run() async throws {
                try await reportingErrors {
                    let status = try await useCase { try await location.app().useCases.redactionKey.status() }
                    var lines = ["this store's redaction key: check \(status.check)"]
                    if let r = status.recorded {
                        lines.append("the history is redacted with: check \(r.check) (\(r.reason), seq \(r.seq))")
                        if !status.matches {
                            lines.append(
                                "they differ: redacted sources are not fetched here until the team's key is installed (`strata key redaction install FILE`)")
                        }
                    } else {
                        lines.append("the history records no key yet: the first redaction records this one")
                    }
                    emit(lines.joined(separator: "\n"))
                }
            }
        }

        struct Export: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "export", abstract: "Write this store's redaction key to a new file (mode 0600) for the other nodes.")
            @OptionGroup var location: StoreLocation
            @Argument(help: "The key file to create (never over an existing file).") var file: String

            func run() async throws {
                try await reportingErrors {
                    let check = try await useCase { try await location.app().useCases.redactionKey.export(toFile: file) }
                    emit(
                        "wrote the redaction key (check \(check)) to \(file) (mode 0600); install it on every node with `strata key redaction install \(file)`")
                }
            }
        }

        struct Install: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "install", abstract: "Make the key in a file this store's redaction key (the team's, before a redacted source is fetched).")
            @OptionGroup var location: StoreLocation
            @Argument(help: "The team's key file (32 bytes, mode 0600).") var file: String

            func run() async throws {
                try await reportingErrors {
                    let r = try await useCase { try await location.app().useCases.redactionKey.install(fromFile: file) }
                    emit(
                        r.recorded
                            ? "installed the redaction key (check \(r.record.check)); recorded at seq \(r.record.seq) as the key this history is redacted with"
                            : "installed the redaction key (check \(r.record.check)): the one this history is redacted with (seq \(r.record.seq))")
                }
            }
        }

        struct Rotate: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "rotate",
                abstract: "Change the redaction key from here on (a new one, or the key in --new-key-file); recorded in the history.",
                discussion: reflowed(
                    """
                    The next fetch of each redacted source stores its values again under the new
                    key; that is not a change of the API's data, and is reported as values
                    re-stored, not as changes, and raises no alert. Other nodes refuse to fetch
                    until they install the new key: export it with `strata key redaction export`.
                    """)
            )
            @OptionGroup var location: StoreLocation
            @Option(help: ArgumentHelp("The new key (32 bytes, mode 0600); a random one when not given.", valueName: "file")) var newKeyFile: String?

            func run() async throws {
                try await reportingErrors {
                    let r = try await useCase { try await location.app().useCases.redactionKey.rotate(toFile: newKeyFile) }
                    emit(
                        "rotated the redaction key (check \(r.check)) at seq \(r.seq); hand it to the other nodes with `strata key redaction export FILE`")
                }
            }
        }
    }

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "generate",
            abstract: "Write a new key file: 32 random bytes, mode 0600; an existing file is never replaced.",
            discussion: reflowed(
                """
                Examples:
                  strata key generate ~/.config/strata/store.key
                """)
        )

        @Argument(help: "The key file to create.") var file: String

        func run() async throws {
            try await reportingErrors {
                try createKeyFile(file, StoreAccess.keyFiles)
                emit("wrote a new key to \(file) (mode 0600)")
            }
        }
    }
}

struct RekeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Rewrite the store under a new key (or encrypt it, or with --decrypt remove encryption).",
        discussion: reflowed(
            """
            Copies the whole log into a new store beside it (DIR.rekey) under the new key, folding
            the projections there, checks that the copy ends at the same event with the same hash,
            then swaps the two directories in one atomic rename while holding the store's write
            lock, and deletes the old one. The key of the store as it is comes from --key-file or
            STRATA_KEY_FILE. A rekey that was stopped goes on from where it stopped when run again.
            Run it while no other strata process writes to the store; set STRATA_KEY_FILE to the new
            key afterwards. The old files are deleted, not wiped.

            Examples:
              strata rekey --new-key-file ~/.config/strata/new.key
              strata rekey --decrypt
            """)
    )

    @OptionGroup var location: StoreLocation
    @Option(help: ArgumentHelp("The new key file (created if missing).", valueName: "file")) var newKeyFile: String?
    @Flag(help: "Rewrite the store without encryption.") var decrypt = false

    func validate() throws {
        if decrypt == (newKeyFile != nil) { throw ValidationError("give either --new-key-file FILE or --decrypt") }
    }

    func run() async throws {
        try await reportingErrors {
            let progress = Progress(label: "copying")
            let replaced: Replacement<LogHead>
            do {
                replaced = try await location.access.files.rekey(toKeyFile: newKeyFile) { progress.update($0) }
                progress.finish()
            } catch {
                progress.finish()
                throw error
            }
            guard case .done(let head) = replaced else {
                emit("the last rekey had swapped the stores; removed the old one")
                return
            }
            var lines = ["rewrote \(head.seq) events \(newKeyFile == nil ? "without encryption" : "under the new key")"]
            if let newKeyFile { lines.append("from now on: export STRATA_KEY_FILE=\(newKeyFile)") } else { lines.append("from now on: unset STRATA_KEY_FILE") }
            emit(lines.joined(separator: "\n"))
        }
    }
}
