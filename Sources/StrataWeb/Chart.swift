import Foundation
import StrataDomain
import StrataJSON

/// A numeric field's values over an item's versions as the points of an SVG polyline (numbers
/// only: nothing from the data reaches the markup but through the template's escaping).
struct Chart {
    var path: String
    var values: [Double]
    let width = 600.0, height = 160.0

    init?(path: String, versions: [ItemVersion]) {
        let values = versions.compactMap { v -> Double? in
            guard case .number(let n) = v.document.value(atPath: path) ?? .null else { return nil }
            return Double(n)
        }.filter(\.isFinite)
        guard values.count >= 1 else { return nil }
        self.path = path
        self.values = values
    }

    var context: [String: Any] {
        let lo = values.min()!, hi = values.max()!
        let span = hi - lo == 0 ? 1 : hi - lo
        let step = values.count > 1 ? width / Double(values.count - 1) : 0
        let points = values.enumerated().map { i, v in
            String(format: "%.1f,%.1f", Double(i) * step, height - 8 - (v - lo) / span * (height - 16))
        }.joined(separator: " ")
        return [
            "path": path, "width": Int(width), "height": Int(height),
            "points": values.count == 1 ? points + " \(Int(width)),\(points.split(separator: ",").last!)" : points,
            "min": Self.text(lo), "max": Self.text(hi), "count": values.count
        ]
    }

    static func text(_ d: Double) -> String { d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d) }
}
