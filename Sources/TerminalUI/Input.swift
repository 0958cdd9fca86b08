/// A key as the terminal sends it.
package enum Key: Sendable, Hashable {
    case character(Character)
    case enter, escape, backspace, tab, backTab
    case up, down, left, right, home, end, pageUp, pageDown, insert, delete
    case function(Int)
    /// Ctrl with a letter (`ctrl("c")`), as raw mode delivers it.
    case control(Character)
}

/// A key with its modifiers.
package struct KeyPress: Sendable, Hashable {
    package var key: Key
    package var shift: Bool
    package var alt: Bool
    package var ctrl: Bool
    package init(_ key: Key, shift: Bool = false, alt: Bool = false, ctrl: Bool = false) {
        self.key = key; self.shift = shift; self.alt = alt; self.ctrl = ctrl
    }
}

/// A mouse report (SGR mode 1006): button, position in cells (0-based), press or release.
package struct MouseEvent: Sendable, Hashable {
    package enum Button: Sendable, Hashable { case left, middle, right, wheelUp, wheelDown, other(Int) }
    package var button: Button
    package var x: Int
    package var y: Int
    package var isRelease: Bool
}

/// What the input decoder produces.
package enum InputEvent: Sendable, Hashable {
    case key(KeyPress)
    case paste(String)
    case mouse(MouseEvent)
}

/// Decodes the bytes a terminal sends into keys, pastes and mouse reports. Bytes may arrive split
/// anywhere: an incomplete sequence waits for the next ``feed(_:)``. A lone ESC is ambiguous (the
/// Esc key, or the start of a sequence): it waits, and ``flush()`` after a short timeout (the
/// caller's, like ncurses' ESCDELAY) makes it the Esc key.
package struct InputDecoder: Sendable {
    private var pending: [UInt8] = []
    private var paste: [UInt8]?

    package init() {}

    /// Whether bytes wait for more (call ``flush()`` when none come within the timeout).
    package var hasPending: Bool { !pending.isEmpty && paste == nil }

    package mutating func feed(_ bytes: some Sequence<UInt8>) -> [InputEvent] {
        pending += bytes
        var out: [InputEvent] = []
        while !pending.isEmpty {
            if paste != nil {
                guard drainPaste(into: &out) else { break }
                continue
            }
            guard let (event, used) = decode(pending[...], final: false) else { break }
            pending.removeFirst(used)
            if let event { out.append(event) }
        }
        return out
    }

    /// Decodes what waits as if no more bytes will follow (a lone ESC is the Esc key).
    package mutating func flush() -> [InputEvent] {
        guard paste == nil else { return [] }
        var out: [InputEvent] = []
        while !pending.isEmpty {
            let (event, used) = decode(pending[...], final: true) ?? (nil, pending.count)
            pending.removeFirst(max(1, used))
            if let event { out.append(event) }
        }
        return out
    }

    private static let pasteEnd: [UInt8] = Array("\u{1B}[201~".utf8)

    private mutating func drainPaste(into out: inout [InputEvent]) -> Bool {
        if let end = pending.firstRange(of: Self.pasteEnd) {
            paste! += pending[..<end.lowerBound]
            pending.removeFirst(end.upperBound)
            out.append(.paste(String(decoding: paste!, as: UTF8.self)))
            paste = nil
            return true
        }
        // Keep a tail that may be the start of the end marker.
        let keep = min(pending.count, Self.pasteEnd.count - 1)
        paste! += pending[..<(pending.count - keep)]
        pending.removeFirst(pending.count - keep)
        return false
    }

    /// One event from the front of `b` and the bytes it used; nil when `b` is incomplete.
    private mutating func decode(_ b: ArraySlice<UInt8>, final: Bool) -> (InputEvent?, Int)? {
        let first = b[b.startIndex]
        switch first {
        case 0x1B:
            guard b.count > 1 else { return final ? (.key(KeyPress(.escape)), 1) : nil }
            let second = b[b.startIndex + 1]
            if second == UInt8(ascii: "[") { return csi(b, final: final) }
            if second == UInt8(ascii: "O") {
                guard b.count > 2 else { return final ? (.key(KeyPress(.character("O"), alt: true)), 2) : nil }
                let keys: [UInt8: Key] = [
                    0x41: .up, 0x42: .down, 0x43: .right, 0x44: .left, 0x48: .home, 0x46: .end,
                    0x50: .function(1), 0x51: .function(2), 0x52: .function(3), 0x53: .function(4)
                ]
                return (keys[b[b.startIndex + 2]].map { .key(KeyPress($0)) }, 3)
            }
            if second == 0x1B { return (.key(KeyPress(.escape)), 1) }
            // ESC + key: Alt.
            guard let (inner, used) = decode(b.dropFirst(), final: final) else { return nil }
            if case .key(var press)? = inner { press.alt = true; return (.key(press), used + 1) }
            return (inner, used + 1)
        case 0x0D, 0x0A: return (.key(KeyPress(.enter)), 1)
        case 0x09: return (.key(KeyPress(.tab)), 1)
        case 0x7F, 0x08: return (.key(KeyPress(.backspace)), 1)
        case 0x00: return (.key(KeyPress(.character(" "), ctrl: true)), 1)
        case 0x01...0x1A:
            let letter = Character(Unicode.Scalar(first + 0x60))
            return (.key(KeyPress(.control(letter), ctrl: true)), 1)
        case 0x1C...0x1F: return (nil, 1)
        default:
            let need = first < 0x80 ? 1 : first >= 0xF0 ? 4 : first >= 0xE0 ? 3 : first >= 0xC0 ? 2 : 1
            guard b.count >= need else { return final ? (nil, b.count) : nil }
            let s = String(decoding: b.prefix(need), as: UTF8.self)
            return (s.first.map { .key(KeyPress(.character($0))) }, need)
        }
    }

    private mutating func csi(_ b: ArraySlice<UInt8>, final: Bool) -> (InputEvent?, Int)? {
        var i = b.startIndex + 2
        while i < b.endIndex, !(0x40...0x7E).contains(b[i]) { i += 1 }
        guard i < b.endIndex else {
            // Incomplete; but a CSI never runs this long, so give up on garbage.
            return final || b.count > 32 ? (nil, b.count) : nil
        }
        let used = i - b.startIndex + 1
        let finalByte = b[i]
        let paramText = String(decoding: b[(b.startIndex + 2)..<i], as: UTF8.self)
        if paramText.hasPrefix("<"), finalByte == UInt8(ascii: "M") || finalByte == UInt8(ascii: "m") {
            let n = paramText.dropFirst().split(separator: ";").compactMap { Int($0) }
            guard n.count == 3 else { return (nil, used) }
            let button: MouseEvent.Button =
                switch n[0] & 0b1100_0011 {
                case 0: .left
                case 1: .middle
                case 2: .right
                case 64: .wheelUp
                case 65: .wheelDown
                default: .other(n[0])
                }
            return (.mouse(MouseEvent(button: button, x: n[1] - 1, y: n[2] - 1, isRelease: finalByte == UInt8(ascii: "m"))), used)
        }
        let params = paramText.split(separator: ";", omittingEmptySubsequences: false).map { Int($0) ?? 0 }
        let mod = params.count > 1 ? max(0, params[1] - 1) : 0
        func press(_ k: Key) -> InputEvent { .key(KeyPress(k, shift: mod & 1 != 0, alt: mod & 2 != 0, ctrl: mod & 4 != 0)) }
        switch finalByte {
        case UInt8(ascii: "A"): return (press(.up), used)
        case UInt8(ascii: "B"): return (press(.down), used)
        case UInt8(ascii: "C"): return (press(.right), used)
        case UInt8(ascii: "D"): return (press(.left), used)
        case UInt8(ascii: "H"): return (press(.home), used)
        case UInt8(ascii: "F"): return (press(.end), used)
        case UInt8(ascii: "Z"): return (.key(KeyPress(.backTab, shift: true)), used)
        case UInt8(ascii: "P"): return (press(.function(1)), used)
        case UInt8(ascii: "Q"): return (press(.function(2)), used)
        case UInt8(ascii: "R"): return (press(.function(3)), used)
        case UInt8(ascii: "S"): return (press(.function(4)), used)
        case UInt8(ascii: "~"):
            let code = params.first ?? 0
            if code == 200 { paste = []; return (nil, used) }
            let keys: [Int: Key] = [
                1: .home, 7: .home, 4: .end, 8: .end, 2: .insert, 3: .delete, 5: .pageUp, 6: .pageDown,
                11: .function(1), 12: .function(2), 13: .function(3), 14: .function(4), 15: .function(5),
                17: .function(6), 18: .function(7), 19: .function(8), 20: .function(9), 21: .function(10),
                23: .function(11), 24: .function(12)
            ]
            return (keys[code].map(press), used)
        default:
            return (nil, used)
        }
    }
}
