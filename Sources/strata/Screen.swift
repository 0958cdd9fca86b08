import ArgumentParser
import ChildProcess
import Foundation
import Synchronization
import StrataApp
import StrataPresentation
import TerminalImages

/// What the terminal can show: width, colour, thumbnails; and where long output goes.
struct Screen {
    let isTTY = Terminal.isTTY
    let environment = ProcessInfo.processInfo.environment

    /// Colour only on a terminal, never with `NO_COLOR` set or a dumb terminal.
    var color: Bool {
        isTTY && (environment["NO_COLOR"] ?? "").isEmpty && !["", "dumb"].contains(environment["TERM"] ?? "")
    }

    var width: Int { Terminal.width }

    var options: RenderOptions { RenderOptions(width: width, color: color, wording: .cli) }

    /// Thumbnails where colour is on (the same rules), in the terminal's colour depth.
    var thumbnailMode: Thumbnailer.ColorMode? {
        color ? Thumbnailer.ColorMode(environment: environment) : nil
    }

    /// Writes `text` to stdout, through the user's pager (`$PAGER`, else `less -FRX`) when on a
    /// terminal and taller than it.
    func page(_ text: String) async {
        var ws = winsize()
        let rows = ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &ws) == 0 && ws.ws_row > 0 ? Int(ws.ws_row) : 0
        let lines = text.reduce(0) { $1 == "\n" ? $0 + 1 : $0 }
        guard isTTY, rows > 0, lines >= rows, environment["STRATA_NO_PAGER"] == nil else { emit(text); return }
        let pager = (environment["PAGER"].flatMap { $0.isEmpty ? nil : $0 }) ?? "less -FRX"
        do {
            _ = try await ChildProcessRunner().interactive(.shell(pager), input: Array(text.utf8))
        } catch {
            emit(text)
        }
    }
}

/// A spinner on stderr while something downloads (only when stderr is a terminal).
final class Spinner: Sendable {
    private let label: String
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let enabled = isatty(STDERR_FILENO) == 1

    init(_ label: String) { self.label = label }

    func start() {
        guard enabled else { return }
        let label = label
        task.withLock { task in
            guard task == nil else { return }
            task = Task.detached {
                let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
                var i = 0
                while !Task.isCancelled {
                    FileHandle.standardError.write(Data("\r\(frames[i % frames.count]) \(label)\u{1B}[K".utf8))
                    i += 1
                    try? await Task.sleep(for: .milliseconds(80))
                }
            }
        }
    }

    func stop() {
        guard
            let running = task.withLock({ t -> Task<Void, Never>? in
                defer { t = nil }; return t
            })
        else { return }
        running.cancel()
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}

/// Output formats of the item screens.
enum ViewFormat: String, ExpressibleByArgument, CaseIterable {
    case table, json, ndjson, csv
}

extension StoreLocation {
    /// Opens the store and assembles the app once (the composition root), for commands that
    /// draw no thumbnails.
    func app(configure: (inout AppConfiguration) -> Void = { _ in }) async throws -> StrataApp {
        var configuration = AppConfiguration(userAgent: "Strata/\(Strata.version)", logger: logger())
        configuration.leaseReport = { source, lease in FetchCommand.reportWrite(lease, source: source) }
        configure(&configuration)
        return try await openApp(configuration)
    }

    /// Opens the store and assembles the app once (the composition root).
    func app(screen: Screen, configure: (inout AppConfiguration) -> Void = { _ in }) async throws -> StrataApp {
        var configuration = AppConfiguration(userAgent: "Strata/\(Strata.version)", logger: logger())
        configuration.thumbnails = screen.thumbnailMode
        configuration.leaseReport = { source, lease in FetchCommand.reportWrite(lease, source: source) }
        configure(&configuration)
        return try await openApp(configuration)
    }

    /// Opens the store through the app, showing catch-up progress on a TTY. A command that only
    /// reads never creates a store: a store that is not there is named, with how to make one.
    private func openApp(_ configuration: AppConfiguration) async throws -> StrataApp {
        if isDefaultPath { StoreNote.defaultPath.withLock { $0 = path } }
        if !FileManager.default.fileExists(atPath: path), !Strata.commandCreatesStores {
            throw CLIError(
                "no store at \(path)\(isDefaultPath ? " (the default: STRATA_STORE and --store are not set)" : ""); `strata source add` makes one there, or point STRATA_STORE at yours",
                exit: ExitCodes.notFound)
        }
        let progress = Progress(label: "catching up")
        defer { progress.finish() }
        do { return try await access.open(configuration: configuration) { progress.update($0) } } catch { throw CLIError(error) }
    }
}

extension PresentableError {
    /// The error as the CLI reports it: one line, with an exit code by kind.
    var cli: CLIError {
        let message = FrontEndWording.cli.message(self)
        return switch kind {
        case .notFound: CLIError(message, exit: ExitCodes.notFound)
        case .invalidInput: CLIError(message, exit: ExitCode.validationFailure)
        case .network, .storage: CLIError(message)
        case .conflict: CLIError(message, exit: ExitCodes.fenced)
        }
    }
}

/// Writes one line to stderr.
func warn(_ text: String) {
    FileHandle.standardError.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
}
