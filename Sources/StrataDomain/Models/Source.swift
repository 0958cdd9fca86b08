/// A mirrored collection API and how its items are shown.
public struct Source: Sendable, Hashable {
    public var name: String
    public var url: String
    public var titlePath: String?
    public var subtitlePaths: [String]
    public var imagePath: String?
    /// Fields indexed for `--where` filters; also the list's extra columns.
    public var indexPaths: [String]
    public var hasDetails: Bool
    /// The latest fetch of the list, successful or not.
    public var lastRun: FetchRun?
    /// The latest fetch that completed.
    public var lastSuccess: FetchRun?
    /// The write side: where creates, updates and deletes go (nil: the source takes none), and
    /// the field naming an item's owner (`list --mine`).
    public var createURL: String?
    public var updateURL: String?
    public var deleteURL: String?
    public var ownerField: String?

    public init(
        name: String, url: String, titlePath: String? = nil, subtitlePaths: [String] = [], imagePath: String? = nil,
        indexPaths: [String] = [], hasDetails: Bool = false, lastRun: FetchRun? = nil, lastSuccess: FetchRun? = nil
    ) {
        self.name = name; self.url = url; self.titlePath = titlePath; self.subtitlePaths = subtitlePaths; self.imagePath = imagePath
        self.indexPaths = indexPaths; self.hasDetails = hasDetails; self.lastRun = lastRun; self.lastSuccess = lastSuccess
    }
}
