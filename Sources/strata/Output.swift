import ArgumentParser
import Foundation
import StrataDomain
import StrataJSON
import StrataPresentation

enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case table, json, ndjson
}

/// Writes rendered output to stdout (logs and progress go to stderr).
func emit(_ text: String) {
    FileHandle.standardOutput.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
}

/// Lines written to standard output as they come: the first at once, then in blocks of 64 KiB,
/// or with the line that comes 100 ms after the last write, so a long stream costs few writes
/// and a slow one still shows its lines soon.
final class LineStream {
    private var buffer: [UInt8] = []
    private var flushed = ContinuousClock.now
    private var first = true

    func write(_ line: String) {
        buffer.append(contentsOf: line.utf8)
        buffer.append(0x0A)
        let now = ContinuousClock.now
        if first || buffer.count >= 1 << 16 || now - flushed > .milliseconds(100) {
            first = false
            flushed = now
            flush()
        }
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Emits values as a pretty JSON array or as one canonical JSON object per line.
func emit(_ values: [JSONValue], as format: OutputFormat) {
    switch format {
    case .ndjson: emit(values.map(\.canonicalString).joined(separator: "\n") + (values.isEmpty ? "" : "\n"))
    default: emit(JSONValue.array(values).prettyString)
    }
}

extension TextTable {
    /// The table cut to the terminal's width.
    func render() -> String { render(maxWidth: Terminal.width) }
}

/// The process's environment variable `name`. `ProcessInfo.processInfo.environment` copies the
/// whole environment into a new dictionary at every use, a cost paid at every command's start
/// for each variable read that way.
func environmentValue(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}

enum Terminal {
    static var isTTY: Bool { isatty(STDOUT_FILENO) == 1 }

    /// The width of stdout's terminal; `COLUMNS` or 160 when not a terminal.
    static var width: Int {
        var ws = winsize()
        if isTTY, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0 { return Int(ws.ws_col) }
        if let c = environmentValue("COLUMNS"), let n = Int(c), n > 0 { return n }
        return 160
    }
}

func byteCount(_ n: some BinaryInteger) -> String {
    let v = Double(n)
    switch v {
    case ..<1024: return "\(n) B"
    case ..<(1024 * 1024): return String(format: "%.1f KiB", v / 1024)
    case ..<(1024 * 1024 * 1024): return String(format: "%.1f MiB", v / 1024 / 1024)
    default: return String(format: "%.2f GiB", v / 1024 / 1024 / 1024)
    }
}

/// A point in the log: a seq, or an ISO 8601 date/time resolved to the last event at or before it.
struct AsOf: ExpressibleByArgument {
    let point: LogPoint

    init?(argument: String) {
        guard let point = LogPoint(text: argument) else { return nil }
        self.point = point
    }

    static var defaultValueDescription: String { "SEQ|DATE" }
}

/// A command's discussion as ArgumentParser should get it: the lines of each paragraph joined,
/// so that it wraps them to the terminal's width (it keeps every newline it is given, and a
/// source line longer than the terminal would end up as a long line and a short one). Blank
/// lines and indented lines (examples) stay as written.
func reflowed(_ text: String) -> String {
    // Bytes, not Characters: every command's discussion is built at each start.
    var out: [UInt8] = []
    out.reserveCapacity(text.utf8.count)
    var previousIsProse = false
    for (i, line) in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
        let isProse = line.first.map { $0 != UInt8(ascii: " ") } ?? false
        if i > 0 { out.append(previousIsProse && isProse ? UInt8(ascii: " ") : UInt8(ascii: "\n")) }
        out.append(contentsOf: line)
        previousIsProse = isProse
    }
    return String(decoding: out, as: UTF8.self)
}

/// A duration as people read it: `840 ms`, `3.21 s`, `2 min 05 s`.
func durationText(_ d: Duration) -> String {
    let seconds = d.inSeconds
    switch seconds {
    case ..<1: return "\(Int((seconds * 1000).rounded())) ms"
    case ..<60: return String(format: "%.2f s", seconds)
    default:
        let whole = Int(seconds.rounded())
        return String(format: "%d min %02d s", whole / 60, whole % 60)
    }
}
