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

    /// The body without its layout, and the layout byte that puts it back; nil when the body is
    /// not JSON laid out this way (checked by putting the layout back and comparing).
    static func minified(_ body: [UInt8]) -> (form: [UInt8], layout: UInt8)? {
        body.withUnsafeBytes { b -> (form: [UInt8], layout: UInt8)? in
            // Pretty-printed: an object or array whose first member starts on the next line.
            guard b.count >= 4, b[0] == UInt8(ascii: "{") || b[0] == UInt8(ascii: "["), b[1] == UInt8(ascii: "\n") else { return nil }
            let unit = b[2]
            guard unit == UInt8(ascii: " ") || unit == UInt8(ascii: "\t") else { return nil }
            var width = 0
            while 2 + width < b.count, b[2 + width] == unit { width += 1 }
            guard width <= Int(widthMask) else { return nil }
            var layout = UInt8(width) | (unit == UInt8(ascii: "\t") ? tab : 0)
            if b[b.count - 1] == UInt8(ascii: "\n") { layout |= finalNewline }
            let form = [UInt8](unsafeUninitializedCapacity: b.count) { out, count in
                var n = 0
                var i = 0
                while i < b.count {
                    let c = b[i]
                    i += 1
                    if c == UInt8(ascii: " ") || c == UInt8(ascii: "\n") || c == UInt8(ascii: "\t") || c == UInt8(ascii: "\r") { continue }
                    out[n] = c
                    n += 1
                    guard c == UInt8(ascii: "\"") else { continue }
                    // A string, whitespace and all, to its closing quote.
                    while i < b.count {
                        let s = b[i]
                        out[n] = s
                        n += 1
                        i += 1
                        if s == UInt8(ascii: "\"") { break }
                        if s == UInt8(ascii: "\\"), i < b.count {
                            out[n] = b[i]
                            n += 1
                            i += 1
                        }
                    }
                }
                count = n
            }
            // Only a layout that gives the body back exactly.
            guard let expanded = try? form.withUnsafeBytes({ try expand($0, layout: layout, size: b.count) }),
                expanded.withUnsafeBytes({ $0.elementsEqual(b) })
            else { return nil }
            return (form, layout)
        }
    }

    /// `form` with the layout put back: `size` bytes, or an error when they would be more or
    /// fewer (a damaged row), never a trap.
    static func expand(_ form: UnsafeRawBufferPointer, layout: UInt8, size: Int) throws -> [UInt8] {
        let width = Int(layout & widthMask)
        let unit = layout & tab != 0 ? UInt8(ascii: "\t") : UInt8(ascii: " ")
        var failed = false
        let body = [UInt8](unsafeUninitializedCapacity: size) { out, count in
            var n = 0
            var level = 0
            var i = 0
            func newline() -> Bool {
                let indent = level * width
                guard n + 1 + indent <= size else { return false }
                out[n] = UInt8(ascii: "\n")
                n += 1
                for k in 0..<indent { out[n + k] = unit }
                n += indent
                return true
            }
            scan: while i < form.count {
                let c = form[i]
                i += 1
                guard n < size else { failed = true; break }
                out[n] = c
                n += 1
                switch c {
                case UInt8(ascii: "\""):
                    while i < form.count {
                        let s = form[i]
                        i += 1
                        guard n < size else { failed = true; break scan }
                        out[n] = s
                        n += 1
                        if s == UInt8(ascii: "\"") { break }
                        if s == UInt8(ascii: "\\"), i < form.count {
                            guard n < size else { failed = true; break scan }
                            out[n] = form[i]
                            n += 1
                            i += 1
                        }
                    }
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    // An empty object or array stays on its line.
                    if i < form.count, form[i] == c + 2 {
                        guard n < size else { failed = true; break scan }
                        out[n] = c + 2
                        n += 1
                        i += 1
                        continue
                    }
                    level += 1
                    guard newline() else { failed = true; break scan }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    guard level > 0 else { failed = true; break scan }
                    level -= 1
                    n -= 1
                    guard newline(), n < size else { failed = true; break scan }
                    out[n] = c
                    n += 1
                case UInt8(ascii: ","):
                    guard newline() else { failed = true; break scan }
                case UInt8(ascii: ":"):
                    guard n < size else { failed = true; break scan }
                    out[n] = UInt8(ascii: " ")
                    n += 1
                default:
                    break
                }
            }
            if !failed, layout & finalNewline != 0 {
                if n < size {
                    out[n] = UInt8(ascii: "\n")
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
