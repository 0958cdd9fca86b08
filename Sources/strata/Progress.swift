import EventStore
import Foundation

/// A one-line progress indicator on stderr, shown only when stderr is a terminal.
final class Progress: @unchecked Sendable {
    private let label: String
    private let enabled = isatty(STDERR_FILENO) == 1
    private let lock = NSLock()
    private var shown = false
    private var lastDraw = Date.distantPast

    init(label: String) { self.label = label }

    func update(_ p: RebuildProgress) {
        guard enabled, p.head > 0 else { return }
        lock.lock(); defer { lock.unlock() }
        let now = Date()
        guard p.applied == p.head || now.timeIntervalSince(lastDraw) > 0.1 else { return }
        if !shown && p.applied == p.head { return }  // nothing to catch up: stay silent
        lastDraw = now
        shown = true
        let pct = Double(p.applied) / Double(p.head) * 100
        FileHandle.standardError.write(Data("\r\(label) \(p.projection): \(p.applied)/\(p.head) (\(String(format: "%.0f", pct))%)\u{1B}[K".utf8))
    }

    func finish() {
        lock.lock(); defer { lock.unlock() }
        if shown { FileHandle.standardError.write(Data("\n".utf8)) }
        shown = false
    }
}
