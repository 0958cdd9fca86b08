import Foundation

/// A source's items at a point and their versions up to it, to write out.
public struct SQLiteExport: Sendable {
    public var source: Source
    /// The point as given (`now`, a seq or a date).
    public var point: String
    /// Items at the point, removed ones included (marked).
    public var items: [Item]
    /// Every version by item id, in observed order.
    public var versions: [String: [ItemVersion]]

    public init(source: Source, point: String, items: [Item], versions: [String: [ItemVersion]]) {
        self.source = source; self.point = point; self.items = items; self.versions = versions
    }
}

/// What an export wrote.
public struct SQLiteExportSummary: Sendable, Hashable {
    public var items: Int
    public var versions: Int
    public var changes: Int
    public var columns: Int

    public init(items: Int, versions: Int, changes: Int, columns: Int) {
        self.items = items; self.versions = versions; self.changes = changes; self.columns = columns
    }
}
