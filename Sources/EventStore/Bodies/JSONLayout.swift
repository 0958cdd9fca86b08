import Glibc

/// The whitespace of pretty-printed JSON, taken out of a body before it is stored and put back
/// when it is read (``BlobCodec`` codec 5).
///
/// Scraping histories are kept pretty-printed, so that git's diffs read well: every file of the
/// four measured (a generator's, two public scrapers', the `items` list) is indented by two
/// spaces, a member a line, as Python's `json.dumps(indent=2)`, `jq .` and
/// `JSON.stringify(v, null, 2)` all write. That whitespace is 18–32% of their bytes, and it is
/// regular enough to rebuild from one byte: the indent (its width, spaces or a tab) and whether
/// the file ends with a newline. Stored without it, the versions' delta chains took 7–14% less
/// (docs/benchmarks.md).
///
/// A body is stored minified only when putting the layout back gives its bytes exactly; any other
/// body (minified already, another style, not JSON) is stored as it is. The rebuilt bytes are
/// the body's: its hash, `verify`, exports and `serve`'s byte-for-byte replay see no difference.
enum JSONLayout {
    /// Bits 0–3 of a layout byte: the indent's width (1–15).
    static let widthMask: UInt8 = 0x0F
    /// Bit 4: a tab (each `width` of them) instead of spaces.
    static let tab: UInt8 = 0x10
    /// Bit 5: a final newline.
    static let finalNewline: UInt8 = 0x20
    /// The largest body stored minified. A read lays its body out again at about 1.3 ns a byte,
    /// some 25 times what a byte of a delta chain costs: on the outages history's 500–700 KB lists
    /// that took the p99 of a body read from 1.09 to 1.78 ms (2.26 ms over its first 2,500
    /// versions), against a 2 ms bound. Up to this size a read stays within it (`pages`, of up to
    /// 396 KB: 1.30–1.35 ms, 1.28 ms before). A lineage whose bodies cross the bound back and
    /// forth pays a delta between a minified and a laid-out version at each crossing.
    static let largest = 400 << 10

    /// The body without its layout, and the layout byte that puts it back; nil when the body is
    /// not JSON laid out this way. One pass: whitespace is taken out only where ``expand(_:layout:size:)``
    /// puts it back (a newline and the indent after an opening bracket and a comma and before a
    /// closing one, a space after a colon, a final newline), and anywhere else it is not laid out.
    static func minified(_ body: [UInt8]) -> (form: [UInt8], layout: UInt8)? {
        body.withUnsafeBytes { b -> (form: [UInt8], layout: UInt8)? in
            // Pretty-printed: an object or array whose first member starts on the next line.
            guard b.count >= 4, b.count <= largest, b[0] == UInt8(ascii: "{") || b[0] == UInt8(ascii: "["), b[1] == UInt8(ascii: "\n") else {
                return nil
            }
            let unit = b[2]
            guard unit == UInt8(ascii: " ") || unit == UInt8(ascii: "\t") else { return nil }
            var width = 0
            while 2 + width < b.count, b[2 + width] == unit { width += 1 }
            guard width <= Int(widthMask) else { return nil }
            var layout = UInt8(width) | (unit == UInt8(ascii: "\t") ? tab : 0)
            let end = b.count - (b[b.count - 1] == UInt8(ascii: "\n") ? 1 : 0)
            if end < b.count { layout |= finalNewline }
            var laidOut = true
            let form = [UInt8](unsafeUninitializedCapacity: b.count) { out, count in
                var n = 0
                var i = 0
                var level = 0
                // A newline and `level` indents at `i`, skipped.
                func newline(_ level: Int) -> Bool {
                    let indent = level * width
                    guard i + 1 + indent <= end, b[i] == UInt8(ascii: "\n") else { return false }
                    for k in (i + 1)..<(i + 1 + indent) where b[k] != unit { return false }
                    i += 1 + indent
                    return true
                }
                scan: while i < end {
                    let c = b[i]
                    switch c {
                    case UInt8(ascii: "\""):
                        let close = closingQuote(b, from: i + 1, end: end)
                        copy(out.baseAddress! + n, b.baseAddress! + i, close - i)
                        n += close - i
                        i = close
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        out[n] = c
                        n += 1
                        i += 1
                        if i < end, b[i] == c + 2 {
                            out[n] = c + 2
                            n += 1
                            i += 1
                        } else {
                            level += 1
                            guard newline(level) else { laidOut = false; break scan }
                        }
                    case UInt8(ascii: ","):
                        out[n] = c
                        n += 1
                        i += 1
                        guard newline(level) else { laidOut = false; break scan }
                    case UInt8(ascii: ":"):
                        out[n] = c
                        n += 1
                        i += 1
                        guard i < end, b[i] == UInt8(ascii: " ") else { laidOut = false; break scan }
                        i += 1
                    case UInt8(ascii: "\n"):
                        // Only before the closing bracket of what is open, and has a member (an
                        // empty one is laid out `[]`).
                        guard level > 0, out[n - 1] != UInt8(ascii: "{"), out[n - 1] != UInt8(ascii: "["), newline(level - 1), i < end,
                            b[i] == UInt8(ascii: "}") || b[i] == UInt8(ascii: "]")
                        else {
                            laidOut = false
                            break scan
                        }
                        level -= 1
                        out[n] = b[i]
                        n += 1
                        i += 1
                    case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "}"), UInt8(ascii: "]"):
                        // Whitespace the layout does not put there, or a bracket closed on the
                        // line of its last member.
                        laidOut = false
                        break scan
                    default:
                        out[n] = c
                        n += 1
                        i += 1
                    }
                }
                count = n
            }
            return laidOut ? (form, layout) : nil
        }
    }

    /// The index just past the quote that closes the string whose text starts at `from` (one not
    /// escaped by an odd run of backslashes), or `end` when none does. Short strings (keys, most
    /// values) byte by byte, long texts through memchr: a call per key cost more than the key.
    @inline(__always)
    private static func closingQuote(_ b: UnsafeRawBufferPointer, from: Int, end: Int) -> Int {
        var k = from
        let short = min(end, from + 48)
        while k < short {
            let c = b[k]
            if c == UInt8(ascii: "\"") { return k + 1 }
            k += c == UInt8(ascii: "\\") ? 2 : 1
        }
        while k < end {
            guard let hit = memchr(b.baseAddress! + k, Int32(UInt8(ascii: "\"")), end - k) else { return end }
            let q = UnsafeRawPointer(hit) - b.baseAddress!
            var slashes = 0
            while q - 1 - slashes >= from, b[q - 1 - slashes] == UInt8(ascii: "\\") { slashes += 1 }
            if slashes % 2 == 0 { return q + 1 }
            k = q + 1
        }
        return end
    }

    /// Copies `count` bytes: short runs byte by byte, longer ones with memcpy.
    @inline(__always)
    private static func copy(_ to: UnsafeMutableRawPointer, _ from: UnsafeRawPointer, _ count: Int) {
        if count <= 32 {
            for k in 0..<count { to.storeBytes(of: from.load(fromByteOffset: k, as: UInt8.self), toByteOffset: k, as: UInt8.self) }
        } else {
            memcpy(to, from, count)
        }
    }

    /// `form` with the layout put back: `size` bytes, or an error when they would be more or
    /// fewer (a damaged row), never a trap.
    static func expand(_ form: UnsafeRawBufferPointer, layout: UInt8, size: Int) throws -> [UInt8] {
        let width = Int(layout & widthMask)
        let unit = layout & tab != 0 ? UInt8(ascii: "\t") : UInt8(ascii: " ")
        var failed = false
        let body = [UInt8](unsafeUninitializedCapacity: size) { out, count in
            let o = UnsafeMutableRawBufferPointer(out)
            var n = 0
            var level = 0
            var i = 0
            func newline() -> Bool {
                let indent = level * width
                guard n + 1 + indent <= size else { return false }
                o[n] = UInt8(ascii: "\n")
                for k in 0..<indent { o[n + 1 + k] = unit }
                n += 1 + indent
                return true
            }
            scan: while i < form.count {
                let c = form[i]
                guard n < size else { failed = true; break }
                switch c {
                case UInt8(ascii: "\""):
                    let close = closingQuote(form, from: i + 1, end: form.count)
                    guard n + close - i <= size else { failed = true; break scan }
                    copy(o.baseAddress! + n, form.baseAddress! + i, close - i)
                    n += close - i
                    i = close
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    o[n] = c
                    n += 1
                    i += 1
                    // An empty object or array stays on its line.
                    if i < form.count, form[i] == c + 2 {
                        guard n < size else { failed = true; break scan }
                        o[n] = c + 2
                        n += 1
                        i += 1
                    } else {
                        level += 1
                        guard newline() else { failed = true; break scan }
                    }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    guard level > 0 else { failed = true; break scan }
                    level -= 1
                    guard newline(), n < size else { failed = true; break scan }
                    o[n] = c
                    n += 1
                    i += 1
                case UInt8(ascii: ","):
                    o[n] = c
                    n += 1
                    i += 1
                    guard newline() else { failed = true; break scan }
                case UInt8(ascii: ":"):
                    guard n + 2 <= size else { failed = true; break scan }
                    o[n] = c
                    o[n + 1] = UInt8(ascii: " ")
                    n += 2
                    i += 1
                default:
                    o[n] = c
                    n += 1
                    i += 1
                }
            }
            if !failed, layout & finalNewline != 0 {
                if n < size {
                    o[n] = UInt8(ascii: "\n")
                    n += 1
                } else {
                    failed = true
                }
            }
            if n != size { failed = true }
            // Initialized bytes only: a failed expansion hands back what it wrote.
            count = n
        }
        if failed { throw ByteReader.Truncated() }
        return body
    }
}
