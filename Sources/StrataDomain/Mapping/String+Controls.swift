/// Text from an API made safe for one line of a terminal or a text cell: the Domain's one-line
/// texts (a diff's values) and the Presentation's `displayLine` and `displayText` share it.
extension String {
    /// Line breaks (`\r\n`, `\r` and `\n` each one) as `lineBreak`, a tab as a space, any other
    /// control character (C0, DEL, C1, the bidirectional overrides) as `�`.
    ///
    /// Byte by byte over the UTF-8: a value of several KB with line breaks in it (an HTML text)
    /// took a scalar append each, a fifth of a `strata history` of such values.
    package func replacingControls(lineBreak: Unicode.Scalar) -> String {
        guard unicodeScalars.contains(where: Self.isControl) else { return self }
        let lineBreak = Array(String(lineBreak).utf8)
        let replacement: [UInt8] = [0xEF, 0xBF, 0xBD]  // U+FFFD
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count + 16)
        var previousCR = false
        var text = self
        text.withUTF8 { b in
            var i = 0
            while i < b.count {
                let lead = b[i]
                if lead < 0x80 {
                    defer { previousCR = lead == 0x0D }
                    i += 1
                    switch lead {
                    case 0x0A where previousCR: continue
                    case 0x0A, 0x0D: out += lineBreak
                    case 0x09: out.append(0x20)
                    case 0..<0x20, 0x7F: out += replacement
                    default: out.append(lead)
                    }
                    continue
                }
                previousCR = false
                // A String's UTF-8 is valid: the lead byte says how long the scalar is.
                let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
                let scalar = UnsafeBufferPointer(rebasing: b[i..<(i + length)])
                // C1 controls (U+0080–U+009F) and the bidirectional overrides
                // (U+202A–U+202E, U+2066–U+2069), as UTF-8.
                let isControl =
                    (length == 2 && lead == 0xC2 && scalar[1] <= 0x9F)
                    || (length == 3 && lead == 0xE2
                        && ((scalar[1] == 0x80 && (0xAA...0xAE).contains(scalar[2])) || (scalar[1] == 0x81 && (0xA6...0xA9).contains(scalar[2]))))
                if isControl { out += replacement } else { out += scalar }
                i += length
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// C0, DEL and C1 controls, and the bidirectional overrides that reorder what a line shows.
    package static func isControl(_ u: Unicode.Scalar) -> Bool {
        u.value < 0x20 || (0x7F...0x9F).contains(u.value) || (0x202A...0x202E).contains(u.value) || (0x2066...0x2069).contains(u.value)
    }
}
