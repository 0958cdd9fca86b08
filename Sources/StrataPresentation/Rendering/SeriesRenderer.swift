package import Foundation
package import StrataDomain
package import StrataJSON

/// `history --field`: the value at one path at each version of an item (`seq`, `observedAt`,
/// `value`), as JSON, CSV, or a table with a sparkline when the values are numbers.
package struct SeriesRenderer: Sendable {
    let path: String

    package init(path: String) { self.path = path }

    /// The series: a point per version whose value at the path differs from the one before
    /// (the first always), a removal as null.
    package func points(_ versions: [ItemVersion]) -> [(seq: UInt64, observedAt: Date, value: JSONValue)] {
        var out: [(seq: UInt64, observedAt: Date, value: JSONValue)] = []
        for v in versions {
            let value: JSONValue = v.kind == .removed ? .null : Self.value(v.document, path)
            if let last = out.last, last.value == value { continue }
            out.append((v.seq, v.recordedAt, value))
        }
        return out
    }

    static func value(_ document: JSONValue, _ path: String) -> JSONValue {
        if let direct = document.value(atPath: path) { return direct }
        let all = document.values(atPath: path)
        return all.isEmpty ? .null : all.count == 1 ? all[0] : .array(all)
    }

    package func json(_ versions: [ItemVersion]) -> [JSONValue] {
        points(versions).map { .object(["seq": .number(String($0.seq)), "observedAt": .string(ISOTime.format($0.observedAt)), "value": $0.value]) }
    }

    package func csv(_ versions: [ItemVersion]) -> String {
        (["seq,observedAt,value"]
            + points(versions).map { p in
                [String(p.seq), ISOTime.format(p.observedAt), p.value.displayText].map(CSVRenderer.escape).joined(separator: ",")
            }).joined(separator: "\n") + "\n"
    }

    package func table(_ versions: [ItemVersion], item: String, options: RenderOptions) -> String {
        let points = points(versions)
        guard !points.isEmpty else { return "no versions of \(item)" }
        var t = TextTable(headers: ["SEQ", "OBSERVED", path.uppercased()])
        for p in points { t.rows.append([String(p.seq), TimeText.format(p.observedAt), p.value.displayText.displayLine]) }
        var out = t.render(maxWidth: options.width)
        let numbers = points.compactMap { if case .number(let n) = $0.value { Double(n) } else { nil } }
        if numbers.count >= 2, numbers.count == points.filter({ $0.value != .null }).count {
            out += "\n\(path): " + Self.sparkline(numbers) + "  \(Self.short(numbers.min()!)) … \(Self.short(numbers.max()!))"
        }
        return out
    }

    /// A line of block characters, one per value, from the lowest (▁) to the highest (█).
    package static func sparkline(_ values: [Double]) -> String {
        let bars: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
        guard let lo = values.min(), let hi = values.max() else { return "" }
        return String(values.map { v in hi == lo ? bars[3] : bars[min(7, Int((v - lo) / (hi - lo) * 7.999))] })
    }

    static func short(_ d: Double) -> String { d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d) }

}
