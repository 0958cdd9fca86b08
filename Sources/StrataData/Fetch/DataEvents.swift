/// The event types of the data layer: past-tense facts with stable tags (schema version 1).
///
/// | type | stream | metadata | payload |
/// |---|---|---|---|
/// | `SourceDefined`, `SourceChanged` | source | `source` | the definition (JSON) |
/// | `SourceRemoved` | source | `source` | none |
/// | `CollectionPageFetched` | source | `source`, `run`, `page`, `url`, `status`, `etag`?, `lastModified`?, `items`?, `id`, `durationMs`, `import`? | the body |
/// | `PageNotModified` | source | as above, status 304 | a reference to the unchanged body |
/// | `FetchCompleted` | source | `source`, `run`, `pages`, `complete` (appended in one batch right after its `pages` page events) | none |
/// | `ListNotModified` | source | `source`, `run`, `pages`: a complete pass whose every page answered 304 (instead of its page events and `FetchCompleted`), when the items still follow a complete fetch of the same pages | none |
/// | `DetailFetched` | source | `source`, `run`, `key`, `url`, `status`, `etag`?, `durationMs` | the body |
/// | `DetailNotModified` | source | as above, status 304 | a reference to the unchanged body |
/// | `ImageFetched` | source | `source`, `run`, `key`, `url`, `contentType`?, `etag`? | the image bytes |
/// | `FetchFailed` | source | `source`, `run`, `url`, `stage` (list/detail/image), `error`, `status`?, `attempt`, `willRetry` | none |
/// | `ItemForgotten` | source | `source`, `items` (how many), `by` | JSON: `source`, `reason`, `by`, `items` (each a keyed digest of an id, never the id), `erased` (details and images erased whole), `rewrites` (`[original SHA-256, new SHA-256]` of every body it rewrote: ``ItemErasure``) |
/// | `RetentionApplied` | source | `source`, `horizon` (the first seq kept), `bodies`, `bytes` | JSON: `source`, `horizon`, `policy`, `bodies`, `bytes`, `rewrites` (as `ItemForgotten`'s: ``SourceRetention``) |
/// | `RedactionKeyRecorded` | `redaction` | `check` (16 hex digits of HMAC-SHA256(key, a fixed text)), `reason` (`first use`, `installed`, `rotated`): the key the history is redacted with from here on (``RedactionKeyLedger``) | none |
/// | `ReadAheadDiscarded` | source | `source`, `run`, `url`, `status` and `durationMs` (a response) or `error` and `message` (none): a list page asked for ahead that the pass did not reach; its items are not applied | the body of a 2xx |
public enum DataEvents {
    public static let sourceDefined = "SourceDefined"
    public static let sourceChanged = "SourceChanged"
    public static let sourceRemoved = "SourceRemoved"
    public static let pageFetched = "CollectionPageFetched"
    public static let pageNotModified = "PageNotModified"
    public static let fetchCompleted = "FetchCompleted"
    public static let listNotModified = "ListNotModified"
    public static let detailFetched = "DetailFetched"
    public static let detailNotModified = "DetailNotModified"
    public static let imageFetched = "ImageFetched"
    public static let fetchFailed = "FetchFailed"
    public static let readAheadDiscarded = "ReadAheadDiscarded"
    public static let itemForgotten = "ItemForgotten"
    public static let retentionApplied = "RetentionApplied"
    public static let redactionKeyRecorded = "RedactionKeyRecorded"
}
