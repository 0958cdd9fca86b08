import Foundation
package import StrataPresentation
package import TerminalUI

/// The browser's run loop: one terminal session, one view model, one view. Keys become commands;
/// every state the view model publishes becomes a frame, written as the difference from the last
/// one. Nothing here decides what to show: the view model does, and the view draws it.
@MainActor
package final class BrowserApp {
    package struct Configuration: Sendable {
        package var theme: Theme
        package var options: BrowserView.Options
        package var mouse: Bool
        /// How often the log's head is read to notice another process's appends.
        package var watchInterval: Duration
        package init(theme: Theme, options: BrowserView.Options, mouse: Bool = false, watchInterval: Duration = .milliseconds(500)) {
            self.theme = theme; self.options = options; self.mouse = mouse; self.watchInterval = watchInterval
        }
    }

    enum Event: Sendable {
        case input(InputEvent)
        case inputClosed
        case signal(TerminalSession.Signal)
        case state(BrowserState)
        case tick
        case head(UInt64)
    }

    private let viewModel: BrowserViewModel
    private let head: @Sendable () async -> UInt64?
    private var configuration: Configuration
    private let session: TerminalSession
    private var view: BrowserView
    private let encoder: FrameEncoder
    private var previous: CellBuffer?
    private var size: Size
    private var quit = false
    private var ticking = false

    package init(viewModel: BrowserViewModel, configuration: Configuration, head: @escaping @Sendable () async -> UInt64?) {
        self.viewModel = viewModel
        self.configuration = configuration
        self.head = head
        session = TerminalSession(mouse: configuration.mouse)
        view = BrowserView(options: configuration.options)
        encoder = FrameEncoder(theme: configuration.theme)
        size = session.size
    }

    /// Runs until the user quits or a signal ends it; the terminal is restored on every way out.
    package func run(source: String?, asOf: String?) async throws {
        try session.enter()
        defer { session.leave() }
        let (events, sink) = AsyncStream<Event>.makeStream()
        let inputTask = Task.detached { [session] in
            for await e in session.events() { sink.yield(.input(e)) }
            sink.yield(.inputClosed)
        }
        let signalTask = Task.detached { [session] in
            for await s in session.signals() { sink.yield(.signal(s)) }
        }
        let stateTask = Task { [viewModel] in
            for await s in viewModel.updates() { sink.yield(.state(s)) }
        }
        let interval = configuration.watchInterval
        let watchTask = Task.detached { [head] in
            // A timer, not a busy loop: one small read transaction per interval.
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if let h = await head() { sink.yield(.head(h)) }
            }
        }
        defer { inputTask.cancel(); signalTask.cancel(); stateTask.cancel(); watchTask.cancel() }

        viewModel.send(.start(source: source, asOf: asOf))
        sendViewport()
        draw()
        for await event in events {
            handle(event, sink: sink)
            if quit { break }
        }
    }

    private func handle(_ event: Event, sink: AsyncStream<Event>.Continuation) {
        switch event {
        case .input(let input):
            handle(input)
        case .inputClosed:
            quit = true
        case .signal(.resize):
            size = session.size
            previous = nil  // repaint everything: no garbage from the old size
            sendViewport()
            draw()
        case .signal(.terminate), .signal(.hangup):
            quit = true
        case .state(let s):
            draw(s)
            if s.isBusy, !ticking { startTicking(sink) }
        case .tick:
            if viewModel.state.isBusy {
                view.options.spinnerFrame += 1
                draw()
            } else {
                ticking = false
            }
        case .head(let h):
            viewModel.send(.headMoved(h))
        }
    }

    /// Advances the spinner while work runs; stops when it ends (an idle browser does nothing).
    private func startTicking(_ sink: AsyncStream<Event>.Continuation) {
        ticking = true
        Task {  // on the main actor, like the app
            while !Task.isCancelled, ticking {
                try? await Task.sleep(for: .milliseconds(100))
                sink.yield(.tick)
            }
        }
    }

    private func sendViewport() {
        let layout = view.layout(size, state: viewModel.state)
        viewModel.send(.viewport(rows: layout.listRows, wide: layout.side != nil))
    }

    private func draw(_ state: BrowserState? = nil) {
        let s = state ?? viewModel.state
        let layout = view.layout(size, state: s)
        if layout.listRows != s.viewportRows { viewModel.send(.viewport(rows: layout.listRows, wide: layout.side != nil)) }
        let next = view.render(s, size: size)
        session.write(encoder.encode(previous: previous, next: next))
        previous = next
    }

    private func handle(_ input: InputEvent) {
        let s = viewModel.state
        switch input {
        case .paste(let text):
            if s.prompt != nil { viewModel.send(.editPrompt((s.prompt?.text ?? "") + text.filter { !$0.isNewline })) }
        case .mouse(let m):
            switch m.button {
            case .wheelUp: viewModel.send(.move(-3))
            case .wheelDown: viewModel.send(.move(3))
            case .left where !m.isRelease && s.screen == .list:
                let layout = view.layout(size, state: s)
                let row = (m.y - layout.content.y - 1) / max(1, view.rowHeight(s))
                if m.y > layout.content.y, m.x < layout.content.maxX, row >= 0 { viewModel.send(.move(s.top + row - s.cursor)) }
            default: break
            }
        case .key(let press):
            if let command = KeyMap.command(for: press, in: s, canGoBack: viewModel.canGoBack, page: max(1, s.viewportRows - 1)) {
                switch command {
                case .quit: quit = true
                case .suspend:
                    session.suspend()
                    previous = nil
                    size = session.size
                    draw()
                case .redraw:
                    previous = nil
                    draw()
                case .send(let c): viewModel.send(c)
                }
            }
        }
    }
}

/// Which command a key means on the screen the user is looking at.
package enum KeyMap {
    package enum Action: Sendable, Equatable {
        case send(BrowserViewModel.Command)
        case quit, suspend, redraw
    }

    package static func command(for press: KeyPress, in s: BrowserState, canGoBack: Bool, page: Int) -> Action? {
        if press.key == .control("c") { return .quit }
        if press.key == .control("z") { return .suspend }
        if press.key == .control("l") { return .redraw }
        if let prompt = s.prompt {
            switch press.key {
            case .enter: return .send(.submitPrompt)
            case .escape: return .send(.cancelPrompt)
            case .backspace: return .send(.editPrompt(String(prompt.text.dropLast())))
            case .tab where !prompt.choices.isEmpty: return .send(.nextChoice(1))
            case .backTab where !prompt.choices.isEmpty: return .send(.nextChoice(-1))
            case .character(let c) where !press.alt: return .send(.editPrompt(prompt.text + String(c)))
            default: return nil
            }
        }
        // Q quits from any screen (tig's convention); q backs out one screen at a time.
        if press.key == .character("Q") { return .quit }
        if let popup = s.popup, popup.question != nil {
            switch press.key {
            case .character("y"), .character("Y"): return .send(.answer(true))
            case .character("n"), .character("N"), .escape, .character("q"): return .send(.answer(false))
            default: return nil
            }
        }
        if s.popup != nil {
            switch press.key {
            case .enter, .escape, .character("q"), .character(" "): return .send(.dismissPopup)
            default: return nil
            }
        }
        if s.showHelp {
            switch press.key {
            case .character("?"), .escape, .character("q"), .enter: return .send(.toggleHelp)
            default: return nil
            }
        }
        switch press.key {
        case .character("q"): return canGoBack ? .send(.back) : .quit
        case .escape, .left: return canGoBack ? .send(.back) : nil
        case .character("?"): return .send(.toggleHelp)
        case .down, .character("j"): return .send(.move(1))
        case .up, .character("k"): return .send(.move(-1))
        case .pageDown, .control("f"), .character(" "): return .send(.move(page))
        case .pageUp, .control("b"): return .send(.move(-page))
        case .home, .character("g"): return .send(.top)
        case .end, .character("G"): return .send(.bottom)
        case .enter, .right, .character("l"): return .send(.open)
        case .character("r"): return .send(.refresh)
        case .character("/") where s.screen == .list: return .send(.beginPrompt(.filter))
        case .character("s") where s.screen == .list: return .send(.cycleSort)
        case .character("h") where s.screen == .detail: return .send(.toggleHistory)
        case .character("[") where s.source != nil: return .send(.step(-1))
        case .character("]") where s.source != nil: return .send(.step(1))
        case .character("{") where s.source != nil: return .send(.jumpToChange(forward: false))
        case .character("}") where s.source != nil: return .send(.jumpToChange(forward: true))
        case .character("t"): return .send(.beginPrompt(.point))
        case .character("L"): return .send(.live)
        case .character("n") where s.source != nil && s.screen != .sources: return .send(.beginCreate)
        case .character("e") where s.screen == .list || s.screen == .detail: return .send(.beginEdit)
        case .character("d") where s.screen == .list || s.screen == .detail: return .send(.beginDelete)
        case .character("a") where s.staging != nil: return .send(.acceptSession)
        case .character("c") where s.staging != nil: return .send(.cancelSession)
        case .character("P") where s.source != nil && s.screen != .sources: return .send(.push)
        default: return nil
        }
    }
}
