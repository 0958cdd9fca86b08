package import StrataJSON
/// A mirrored collection API and how its items are shown.
package struct Source: Sendable, Hashable {
    package var name: String
    package var url: String
    package var titlePath: String?
    package var subtitlePaths: [String]
    package var imagePath: String?
    /// Fields indexed for `--where` filters; also the list's extra columns.
    package var indexPaths: [String]
    package var hasDetails: Bool
    /// The latest fetch of the list, successful or not.
    package var lastRun: FetchRun?
    /// The latest fetch that completed.
    package var lastSuccess: FetchRun?
    /// The write side: where creates, updates and deletes go (nil: the source takes none), and
    /// the field naming an item's owner (`list --mine`).
    package var createURL: String?
    package var updateURL: String?
    package var deleteURL: String?
    package var ownerField: String?
    /// Exchanges recorded by `strata proxy` or imported from HAR and WARC: no list to fetch.
    package var isRecorded = false

    package init(
        name: String, url: String, titlePath: String? = nil, subtitlePaths: [String] = [], imagePath: String? = nil,
        indexPaths: [String] = [], hasDetails: Bool = false, lastRun: FetchRun? = nil, lastSuccess: FetchRun? = nil
    ) {
        self.name = name; self.url = url; self.titlePath = titlePath; self.subtitlePaths = subtitlePaths; self.imagePath = imagePath
        self.indexPaths = indexPaths; self.hasDetails = hasDetails; self.lastRun = lastRun; self.lastSuccess = lastSuccess
    }
}

extension Source {
    /// What an item of this source is called in `document` (a version of it): the scalar at the
    /// title path, else its id.
    package func title(of document: JSONValue?, id: String) -> String {
        titlePath.flatMap { document?.value(atPath: $0) }.flatMap(\.scalarText) ?? id
    }
}
