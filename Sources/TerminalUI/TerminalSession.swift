import Dispatch
import Foundation
import Glibc

/// Owns the terminal while a full-screen app runs: raw mode, the alternate screen, a hidden
/// cursor, bracketed paste and (on request) the mouse. Restores the terminal on every way out:
/// ``leave()``, process exit, SIGTERM/SIGHUP (delivered as ``Signal`` events so the app can quit
/// in order), and crash signals (restored from the handler with async-signal-safe calls, then
/// the previous handler runs). ``suspend()`` handles Ctrl-Z: restore, stop, re-enter on `fg`.
///
/// The only type of the toolkit that touches termios and signals. One per process.
// Unchecked: it owns the process's termios state and signal handlers, which are global; one
// per process, its methods called from the screen's own task.
package final class TerminalSession: @unchecked Sendable {
    /// Signals the app should act on.
    package enum Signal: Sendable, Hashable { case resize, terminate, hangup }

    package let input: Int32
    package let output: Int32
    private let mouse: Bool
    private var active = false
    private var signalSources: [any DispatchSourceSignal] = []
    private var signalContinuation: AsyncStream<Signal>.Continuation?
    private var inputThread: Thread?

    /// Whether both ends are terminals and `TERM` is not dumb: a full-screen app can run.
    package static func isInteractive(environment: [String: String]) -> Bool {
        isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 && !["", "dumb"].contains(environment["TERM"] ?? "")
    }

    package init(input: Int32 = 0, output: Int32 = 1, mouse: Bool = false) {
        self.input = input
        self.output = output
        self.mouse = mouse
    }

    /// The terminal's size now.
    package var size: Size {
        var ws = winsize()
        if ioctl(output, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0 {
            return Size(columns: Int(ws.ws_col), rows: Int(ws.ws_row))
        }
        return Size(columns: 80, rows: 24)
    }

    /// Enters raw mode and the alternate screen. Throws when the terminal's modes cannot be read.
    package func enter() throws {
        guard !active else { return }
        var saved = termios()
        guard tcgetattr(input, &saved) == 0 else { throw TerminalError("cannot read the terminal's modes (errno \(errno))") }
        TerminalRestore.install(saved: saved, fd: input, output: output, leave: leaveBytes)
        var raw = saved
        cfmakeraw(&raw)
        raw.c_oflag |= tcflag_t(OPOST)  // keep "\n" → "\r\n" for anything printed by accident
        tcsetattr(input, TCSAFLUSH, &raw)
        write(enterBytes)
        active = true
    }

    /// Leaves the alternate screen and restores the saved modes. Safe to call twice.
    package func leave() {
        guard active else { return }
        active = false
        TerminalRestore.restoreNow()
    }

    /// Ctrl-Z: restores the terminal, stops the process like the shell expects, and re-enters
    /// when it is continued. The caller repaints everything after this returns.
    package func suspend() {
        leave()
        // `raise` is thread-directed, and the worker thread this runs on blocks most signals:
        // unblock SIGTSTP here first, so the stop happens inside `raise` (a signal to oneself is
        // delivered before the call returns) and `fg` continues right after it. (A SIGTSTP sent to
        // the process instead lands on another thread while this one re-enters the alternate
        // screen.)
        var only = sigset_t(), previous = sigset_t()
        sigemptyset(&only)
        sigaddset(&only, SIGTSTP)
        pthread_sigmask(SIG_UNBLOCK, &only, &previous)
        raise(SIGTSTP)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        try? enter()
    }

    private var enterBytes: [UInt8] {
        Array(("\u{1B}[?1049h\u{1B}[?25l\u{1B}[?2004h" + (mouse ? "\u{1B}[?1000h\u{1B}[?1006h" : "") + "\u{1B}[H\u{1B}[2J").utf8)
    }

    private var leaveBytes: [UInt8] {
        Array(((mouse ? "\u{1B}[?1006l\u{1B}[?1000l" : "") + "\u{1B}[?2004l\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l").utf8)
    }

    /// Writes all of `bytes` to the terminal.
    package func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(output, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; return }
                offset += n
            }
        }
    }

    /// SIGWINCH, SIGTERM and SIGHUP as events (SIGTERM and SIGHUP no longer end the process by
    /// themselves: the app quits in order, restoring the terminal).
    package func signals() -> AsyncStream<Signal> {
        let (stream, continuation) = AsyncStream<Signal>.makeStream()
        signalContinuation = continuation
        let queue = DispatchQueue(label: "terminal.signals")
        for (number, event) in [(SIGWINCH, Signal.resize), (SIGTERM, .terminate), (SIGHUP, .hangup)] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { continuation.yield(event) }
            source.resume()
            signalSources.append(source)
        }
        return stream
    }

    /// Keys, pastes and mouse reports, read on a thread of their own (blocking reads never touch
    /// the task pool); a lone ESC becomes the Esc key after `escapeDelay` milliseconds. The stream
    /// ends when input closes.
    package func events(escapeDelay: Int32 = 25) -> AsyncStream<InputEvent> {
        let (stream, continuation) = AsyncStream<InputEvent>.makeStream()
        let fd = input
        let thread = Thread {
            var decoder = InputDecoder()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&p, 1, decoder.hasPending ? escapeDelay : -1)
                if ready < 0 { if errno == EINTR { continue }; break }
                if ready == 0 {
                    for e in decoder.flush() { continuation.yield(e) }
                    continue
                }
                let n = read(fd, &buffer, buffer.count)
                if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; break }
                if n == 0 { break }
                for e in decoder.feed(buffer[..<n]) { continuation.yield(e) }
            }
            continuation.finish()
        }
        thread.name = "terminal.input"
        thread.start()
        inputThread = thread
        return stream
    }
}

/// A failure to take over the terminal.
package struct TerminalError: Error, Sendable, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// What a signal handler needs to restore the terminal: fixed storage, written once before the
/// handlers are installed, read with async-signal-safe calls only (`write`, `tcsetattr`).
enum TerminalRestore {
    nonisolated(unsafe) private static var saved = termios()
    nonisolated(unsafe) private static var fd: Int32 = 0
    nonisolated(unsafe) private static var output: Int32 = 1
    nonisolated(unsafe) private static var leave: UnsafeMutablePointer<UInt8>?
    nonisolated(unsafe) private static var leaveCount = 0
    nonisolated(unsafe) private static var armed: Int32 = 0
    nonisolated(unsafe) private static var installed = false
    /// The handlers ours replaced, by signal number (fixed storage: read inside the handler).
    nonisolated(unsafe) private static let previous = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
    nonisolated(unsafe) private static let hadPrevious = UnsafeMutablePointer<Bool>.allocate(capacity: 65)
    private static let crashSignals: [Int32] = [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGABRT, SIGQUIT]

    static func install(saved s: termios, fd f: Int32, output o: Int32, leave bytes: [UInt8]) {
        saved = s
        fd = f
        output = o
        if leave == nil {
            leave = .allocate(capacity: 64)
        }
        leaveCount = min(64, bytes.count)
        for (i, b) in bytes.prefix(64).enumerated() { leave![i] = b }
        armed = 1
        guard !installed else { return }
        installed = true
        atexit { TerminalRestore.restoreNow() }
        for sig in crashSignals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { sig in
                TerminalRestore.restoreNow()
                TerminalRestore.reraise(sig)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            hadPrevious[Int(sig)] = sigaction(sig, &action, previous + Int(sig)) == 0
        }
    }

    /// Restores once per ``install``; async-signal-safe.
    static func restoreNow() {
        guard armed == 1 else { return }
        armed = 0
        if let leave { _ = Glibc.write(output, leave, leaveCount) }
        tcsetattr(fd, TCSAFLUSH, &saved)
    }

    /// Puts back the handler that was there before ours and raises the signal again.
    static func reraise(_ sig: Int32) {
        if sig > 0, sig < 65, hadPrevious[Int(sig)] { sigaction(sig, previous + Int(sig), nil) } else { signal(sig, SIG_DFL) }
        raise(sig)
    }
}
