import CImageDecode
import Glibc

/// Draws images as coloured Unicode block symbols that fit a few terminal cells (chafa), for
/// thumbnails inside table rows. Pure computation: no terminal I/O, safe from any thread.
package struct Thumbnailer: Sendable {
    /// How many colours the terminal shows.
    package enum ColorMode: Sendable, Hashable {
        case trueColor, indexed256, indexed16

        /// From the environment, as terminals announce themselves: `COLORTERM=truecolor|24bit`
        /// or a `TERM` ending in `-direct` is true colour, a `TERM` with `256color` is 256, else 16.
        package init(environment: [String: String]) {
            let term = environment["TERM"] ?? ""
            let colorterm = (environment["COLORTERM"] ?? "").lowercased()
            if colorterm == "truecolor" || colorterm == "24bit" || term.hasSuffix("-direct") {
                self = .trueColor
            } else if term.contains("256color") {
                self = .indexed256
            } else {
                self = .indexed16
            }
        }

        var colors: imgdec_colors {
            switch self {
            case .trueColor: IMGDEC_TRUECOLOR
            case .indexed256: IMGDEC_INDEXED_240
            case .indexed16: IMGDEC_INDEXED_16
            }
        }
    }

    package var mode: ColorMode

    package init(mode: ColorMode) { self.mode = mode }

    /// The image in at most `columns` × `rows` cells, one string per row, each padded to exactly
    /// `columns` visible cells and ending with a colour reset; nil if the bytes are not a PNG or
    /// JPEG this decoder accepts.
    package func render(_ bytes: [UInt8], columns: Int, rows: Int) -> [String]? {
        guard columns > 0, rows > 0, !bytes.isEmpty else { return nil }
        var w: Int32 = 0, h: Int32 = 0
        var err = [CChar](repeating: 0, count: 256)
        let pixels = bytes.withUnsafeBufferPointer { buf in
            imgdec_decode_rgba(buf.baseAddress, buf.count, Int32(max(columns, rows * 2)), &w, &h, &err, err.count)
        }
        guard let pixels else { return nil }
        defer { free(pixels) }
        var cols = Int32(columns), rowCount = Int32(rows)
        guard let drawn = imgdec_draw_symbols(pixels, w, h, &cols, &rowCount, mode.colors, &err, err.count) else { return nil }
        let text = String(cString: drawn)
        free(drawn)
        let pad = String(repeating: " ", count: columns - Int(cols))
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            var l = String(line)
            if l.contains("\u{1B}") && !l.hasSuffix("\u{1B}[0m") { l += "\u{1B}[0m" }
            return l + pad
        }
        while lines.count < rows { lines.append(String(repeating: " ", count: columns)) }
        return lines
    }
}
