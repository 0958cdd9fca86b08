import Foundation
import StrataDomain
import Synchronization

/// A one-line progress indicator on stderr, shown only when stderr is a terminal.
final class Progress: Sendable {
    private struct Shown {
        var shown = false
        var lastDraw = Date.distantPast
    }
    private let label: String
    private let enabled = isatty(STDERR_FILENO) == 1
    private let state = Mutex(Shown())

    init(label: String) { self.label = label }

    func update(_ p: CatchUpProgress) {
        guard enabled, p.head > 0 else { return }
        let label = self.label
        state.withLock { s in
            let now = Date()
            guard p.applied == p.head || now.timeIntervalSince(s.lastDraw) > 0.1 else { return }
            if !s.shown && p.applied == p.head { return }  // nothing to catch up: stay silent
            s.lastDraw = now
            s.shown = true
            let pct = Double(p.applied) / Double(p.head) * 100
            FileHandle.standardError.write(Data("\r\(label) \(p.projection): \(p.applied)/\(p.head) (\(String(format: "%.0f", pct))%)\u{1B}[K".utf8))
        }
    }

    func finish() {
        state.withLock { s in
            if s.shown { FileHandle.standardError.write(Data("\n".utf8)) }
            s.shown = false
        }
    }
}
