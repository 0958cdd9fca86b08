import CChafa
import CImageDecode
import Glibc

/// Draws images as coloured Unicode block symbols that fit a few terminal cells (chafa), for
/// thumbnails inside table rows. Pure computation: no terminal I/O, safe from any thread.
public struct Thumbnailer: Sendable {
    /// How many colours the terminal shows.
    public enum ColorMode: Sendable, Hashable {
        case trueColor, indexed256, indexed16

        /// From the environment, as terminals announce themselves: `COLORTERM=truecolor|24bit`
        /// or a `TERM` ending in `-direct` is true colour, a `TERM` with `256color` is 256, else 16.
        public init(environment: [String: String]) {
            let term = environment["TERM"] ?? ""
            let colorterm = (environment["COLORTERM"] ?? "").lowercased()
            if colorterm == "truecolor" || colorterm == "24bit" || term.hasSuffix("-direct") { self = .trueColor }
            else if term.contains("256color") { self = .indexed256 }
            else { self = .indexed16 }
        }

        var chafa: ChafaCanvasMode {
            switch self {
            case .trueColor: CHAFA_CANVAS_MODE_TRUECOLOR
            case .indexed256: CHAFA_CANVAS_MODE_INDEXED_240
            case .indexed16: CHAFA_CANVAS_MODE_INDEXED_16
            }
        }
    }

    public var mode: ColorMode

    public init(mode: ColorMode) { self.mode = mode }

    /// The image in at most `columns` × `rows` cells, one string per row, each padded to exactly
    /// `columns` visible cells and ending with a colour reset; nil if the bytes are not a PNG or
    /// JPEG this decoder accepts.
    public func render(_ bytes: [UInt8], columns: Int, rows: Int) -> [String]? {
        guard columns > 0, rows > 0, !bytes.isEmpty else { return nil }
        var w: Int32 = 0, h: Int32 = 0
        var err = [CChar](repeating: 0, count: 256)
        let pixels = bytes.withUnsafeBufferPointer { buf in
            imgdec_decode_rgba(buf.baseAddress, buf.count, Int32(max(columns, rows * 2)), &w, &h, &err, err.count)
        }
        guard let pixels else { return nil }
        defer { free(pixels) }
        var cols = Int32(columns), rowCount = Int32(rows)
        chafa_calc_canvas_geometry(w, h, &cols, &rowCount, 0.5, 1, 0)
        guard cols > 0, rowCount > 0 else { return nil }
        let config = chafa_canvas_config_new()
        defer { chafa_canvas_config_unref(config) }
        chafa_canvas_config_set_geometry(config, cols, rowCount)
        chafa_canvas_config_set_canvas_mode(config, mode.chafa)
        chafa_canvas_config_set_pixel_mode(config, CHAFA_PIXEL_MODE_SYMBOLS)
        chafa_canvas_config_set_optimizations(config, CHAFA_OPTIMIZATION_REUSE_ATTRIBUTES)
        let map = chafa_symbol_map_new()
        defer { chafa_symbol_map_unref(map) }
        let tags = CHAFA_SYMBOL_TAG_BLOCK.rawValue | CHAFA_SYMBOL_TAG_HALF.rawValue | CHAFA_SYMBOL_TAG_SPACE.rawValue | CHAFA_SYMBOL_TAG_SOLID.rawValue
        chafa_symbol_map_add_by_tags(map, ChafaSymbolTags(rawValue: tags))
        chafa_canvas_config_set_symbol_map(config, map)
        guard let canvas = chafa_canvas_new(config) else { return nil }
        defer { chafa_canvas_unref(canvas) }
        chafa_canvas_draw_all_pixels(canvas, CHAFA_PIXEL_RGBA8_UNASSOCIATED, pixels, w, h, w * 4)
        guard let gs = chafa_canvas_print(canvas, nil) else { return nil }
        let text = String(cString: gs.pointee.str)
        g_string_free(gs, 1)
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
