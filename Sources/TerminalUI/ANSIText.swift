/// Turns text with SGR colour escapes (a thumbnail drawn by chafa) into cells, so images diff and
/// golden-test like any text. Understands `38/48;5;n`, `38/48;2;r;g;b`, the 16 base colours and
/// resets; other escapes are dropped.
package enum ANSIText {
    package static func cells(_ line: String, role: StyleRole = .normal) -> [Cell] {
        var out: [Cell] = []
        var fg: Color?, bg: Color?
        var scalars = Array(line.unicodeScalars)[...]
        var text = String.UnicodeScalarView()
        func flush() {
            for c in String(text) {
                let w = TextWidth.of(c)
                if w == 0 { continue }
                out.append(Cell(String(c), width: UInt8(w), role: role, foreground: fg, background: bg))
                if w == 2 { out.append(Cell("", width: 0, role: role, foreground: fg, background: bg)) }
            }
            text = String.UnicodeScalarView()
        }
        while let s = scalars.first {
            scalars = scalars.dropFirst()
            guard s == "\u{1B}" else { text.append(s); continue }
            flush()
            guard scalars.first == "[" else { scalars = scalars.dropFirst(); continue }
            scalars = scalars.dropFirst()
            var params = ""
            while let p = scalars.first, !(0x40...0x7E).contains(p.value) { params.unicodeScalars.append(p); scalars = scalars.dropFirst() }
            let final = scalars.first
            scalars = scalars.dropFirst()
            guard final == "m" else { continue }
            let nums = params.split(separator: ";", omittingEmptySubsequences: false).map { Int($0) ?? 0 }
            var i = 0
            while i < max(nums.count, 1) {
                let n = nums.isEmpty ? 0 : nums[i]
                switch n {
                case 0: fg = nil; bg = nil
                case 30...37: fg = .indexed(UInt8(n - 30))
                case 90...97: fg = .indexed(UInt8(n - 90 + 8))
                case 40...47: bg = .indexed(UInt8(n - 40))
                case 100...107: bg = .indexed(UInt8(n - 100 + 8))
                case 39: fg = nil
                case 49: bg = nil
                case 38, 48:
                    var color: Color?
                    if i + 2 < nums.count, nums[i + 1] == 5 {
                        color = .indexed(UInt8(clamping: nums[i + 2])); i += 2
                    } else if i + 4 < nums.count, nums[i + 1] == 2 {
                        color = .rgb(UInt8(clamping: nums[i + 2]), UInt8(clamping: nums[i + 3]), UInt8(clamping: nums[i + 4])); i += 4
                    }
                    if n == 38 { fg = color } else { bg = color }
                default: break
                }
                i += 1
            }
        }
        flush()
        return out
    }
}
