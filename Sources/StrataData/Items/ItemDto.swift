public import EventStore

/// One item of a list response as the network sent it: its id (from the source's id paths) and
/// its JSON.
public struct ItemDto: Sendable, Hashable {
    public var id: String
    public var fields: JSONValue
    public init(id: String, fields: JSONValue) { self.id = id; self.fields = fields }
}

/// One page of a list response: its items in order and the next page's URL, if the body names one.
public struct ItemListPageDto: Sendable, Hashable {
    public var items: [ItemDto]
    public var next: String?

    public init(items: [ItemDto], next: String? = nil) { self.items = items; self.next = next }

    /// Decodes a list body the way `source` describes it.
    /// - Throws: ``FetchError`` for malformed JSON, a missing items path, the wrong type, items
    ///   without an id and duplicate ids.
    public init(body: [UInt8], url: String, source: SourceDefinition) throws(FetchError) {
        let (document, items) = try ItemExtraction(source).items(in: body, url: url)
        self.items = items.map { ItemDto(id: $0.key, fields: $0.item) }
        if let path = source.next, case .string(let raw)? = document.value(atPath: path), !raw.isEmpty {
            next = resolve(raw, against: url)
        } else {
            next = nil
        }
    }
}

/// One item's detail response.
public struct ItemDetailDto: Sendable, Hashable {
    public var id: String
    public var document: JSONValue

    public init(id: String, document: JSONValue) { self.id = id; self.document = document }

    /// - Throws: ``FetchError`` `malformedJSON` when the body is not JSON.
    public init(id: String, body: [UInt8], url: String) throws(FetchError) {
        do { document = try JSONValue(parsing: body) } catch { throw Self.malformed(id, url, error) }
        self.id = id
    }

    /// Checks that a detail body is JSON and returns its canonical form (what the store keeps as
    /// the item's detail document), in one pass.
    /// - Throws: ``FetchError`` `malformedJSON` when the body is not JSON.
    public static func canonicalize(id: String, body: [UInt8], url: String) throws(FetchError) -> [UInt8] {
        do { return try JSONValue.canonicalize(body) } catch { throw malformed(id, url, error) }
    }

    private static func malformed(_ id: String, _ url: String, _ error: JSONParseError) -> FetchError {
        FetchError(code: .malformedJSON, message: "the detail of \(id) is not valid JSON (\(error))", url: url)
    }
}
