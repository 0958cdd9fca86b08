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
        abstract: "Make key files for encrypted stores.",
        subcommands: [Generate.self]
    )

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
