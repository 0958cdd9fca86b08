import Foundation

/// A source's items at a point and their versions up to it, to write out.
package struct SQLiteExport: Sendable {
    package var source: Source
    /// The point as given (`now`, a seq or a date).
    package var point: String
    /// Items at the point, removed ones included (marked).
    package var items: [Item]
    /// Every version by item id, in observed order.
    package var versions: [String: [ItemVersion]]

    package init(source: Source, point: String, items: [Item], versions: [String: [ItemVersion]]) {
        self.source = source; self.point = point; self.items = items; self.versions = versions
    }
}

/// What an export wrote.
package struct SQLiteExportSummary: Sendable, Hashable {
    package var items: Int
    package var versions: Int
    package var changes: Int
    package var columns: Int

    package init(items: Int, versions: Int, changes: Int, columns: Int) {
        self.items = items; self.versions = versions; self.changes = changes; self.columns = columns
    }
}
