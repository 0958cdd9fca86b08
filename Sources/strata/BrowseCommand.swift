import ArgumentParser
import Foundation
import StrataApp
import StrataBrowser
import StrataDomain
import StrataPresentation
import TerminalImages
import TerminalUI

/// `strata browse`: the full-screen app. Reaches the same use cases as every command, through
/// the same composition root.
struct BrowseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browse",
        abstract: "Browse sources, lists and details full-screen, with a time slider over the log.",
        discussion: reflowed(
            """
            Opens on the sources screen, or on NAME's list. Keys: ↑↓/jk move, Enter opens, Esc/q goes
            back, / filters (make=Toyota uses the index), s sorts, r refreshes in the background,
            [ ] step the slider one event, { } jump to the selected item's changes, t goes to a seq or
            date, L returns to live, ? shows the keys of the screen. Another process's fetch shows up
            within a second. On a writable source: n creates an item, e edits the selected one (Tab
            cycles its fields; the edit is staged in --session), a/c accept or cancel the staged
            edits as one, d deletes after asking, P pushes the outbox.
            """)
    )

    enum ThemeChoice: String, ExpressibleByArgument, CaseIterable { case auto, dark, light }

    @OptionGroup var location: StoreLocation
    @Argument(help: "Open this source's list instead of the sources screen.") var name: String?
    @Option(help: "Open with the slider at a seq or an ISO 8601 date.") var asOf: PointArgument?
    @Option(help: "auto (from COLORFGBG), dark or light.") var theme: ThemeChoice = .auto
    @Flag(help: "ASCII borders, markers and spinner.") var ascii = false
    @Flag(help: "Turn on the mouse (wheel scrolls, a click selects).") var mouse = false
    @Option(help: ArgumentHelp("The edit session `e` stages in (see `strata session show NAME`).", valueName: "name")) var session = "browse"

    func validate() throws {
        if session.isEmpty || session.contains("/") { throw ValidationError("--session must be a name without '/'") }
        guard TerminalSession.isInteractive(environment: ProcessInfo.processInfo.environment) else {
            throw ValidationError("strata browse needs a terminal (stdin and stdout a TTY, TERM not dumb); in scripts and pipes use `strata list NAME`")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let env = ProcessInfo.processInfo.environment
            let noColor = !(env["NO_COLOR"] ?? "").isEmpty
            let app = try await location.app(screen: Screen()) { $0.thumbnails = noColor ? nil : Thumbnailer.ColorMode(environment: env) }
            if let name {
                do { _ = try await app.useCases.sources.source(named: name) } catch { throw PresentableError(error).cli }
            }
            let chosen: Theme =
                switch theme {
                case _ where noColor: .monochrome
                case .auto: Theme.detect(colorfgbg: env["COLORFGBG"])
                case .dark: .dark
                case .light: .light
                }
            let configuration = BrowserApp.Configuration(
                theme: chosen, options: BrowserView.Options(ascii: ascii, thumbnail: noColor ? nil : (columns: 4, rows: 2)), mouse: mouse)
            try await Self.browse(app: app, configuration: configuration, source: name, asOf: asOf?.text, session: session)
        }
    }

    @MainActor
    static func browse(app: StrataApp, configuration: BrowserApp.Configuration, source: String?, asOf: String?, session: String) async throws {
        let viewModel = app.viewModels.browser(listThumbnail: (columns: 4, rows: 2), detailThumbnail: (columns: 24, rows: 12), session: session, wording: .cli)
        let replay = app.useCases.replay
        let browser = BrowserApp(viewModel: viewModel, configuration: configuration, head: { try? await replay.resolve(.now) })
        try await browser.run(source: source, asOf: asOf)
    }
}
