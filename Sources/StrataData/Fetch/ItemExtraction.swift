public import EventStore

/// Finds the items of a list body and their ids, rejecting bodies Strata must not store as a
/// page: malformed JSON, a missing items path, the wrong JSON type, items without an id and
/// duplicate ids.
public struct ItemExtraction: Sendable {
    public var itemsPath: String?
    public var idPaths: [String]

    public init(itemsPath: String?, idPaths: [String]) {
        self.itemsPath = itemsPath
        self.idPaths = idPaths
    }

    public init(_ source: SourceDefinition) { self.init(itemsPath: source.items, idPaths: source.id) }

    /// The metadata that lets the items projection repeat this extraction from the event alone.
    public var metadata: [(key: String, value: String)] {
        [("items", itemsPath ?? ""), ("id", idPaths.joined(separator: ","))]
    }

    public init(metadataOf event: RecordedEvent) {
        let items = event[metadata: "items"] ?? ""
        self.init(itemsPath: items.isEmpty ? nil : items, idPaths: (event[metadata: "id"] ?? "id").split(separator: ",").map(String.init))
    }

    /// The parsed body and its items, in order, keyed by id.
    public func items(in body: [UInt8], url: String) throws(FetchError) -> (document: JSONValue, items: [(key: String, item: JSONValue)]) {
        let doc: JSONValue
        do { doc = try JSONValue(parsing: body) } catch {
            throw FetchError(code: .malformedJSON, message: "the response is not valid JSON (\(error))", url: url)
        }
        let container: JSONValue
        if let itemsPath {
            guard let v = doc.value(atPath: itemsPath) else {
                if case .object = doc {
                } else {
                    throw FetchError(code: .wrongType, message: "expected a JSON object holding '\(itemsPath)', got \(doc.kindName)", url: url)
                }
                throw FetchError(code: .itemsPath, message: "the response has no '\(itemsPath)'; check --items", url: url)
            }
            container = v
        } else {
            container = doc
        }
        var out: [(String, JSONValue)] = []
        var seen = Set<String>()
        switch container {
        case .array(let list):
            guard idPaths != ["@key"] else {
                throw FetchError(code: .wrongType, message: "--id @key needs the items to be an object keyed by id, but they are an array", url: url)
            }
            for (i, item) in list.enumerated() {
                let key = try id(of: item, index: i, url: url)
                guard seen.insert(key).inserted else {
                    throw FetchError(code: .duplicateIds, message: "two items have the id '\(key.prefix(80))'; check --id", url: url)
                }
                out.append((key, item))
            }
        case .object(let map) where idPaths == ["@key"]:
            for m in JSONValue.sortedMembers(map) { out.append((m.key, m.value)) }
        case .object:
            throw FetchError(
                code: .wrongType, message: "the items are an object, not an array; use --id @key for object maps or point --items at the array", url: url)
        default:
            throw FetchError(
                code: .wrongType, message: "expected an array of items\(itemsPath.map { " at '\($0)'" } ?? ""), got \(container.kindName)", url: url)
        }
        return (doc, out)
    }

    private func id(of item: JSONValue, index: Int, url: String) throws(FetchError) -> String {
        var parts: [String] = []
        for p in idPaths {
            switch item.value(atPath: p) {
            case .string(let s)? where !s.isEmpty: parts.append(s)
            case .number(let n)?: parts.append(n)
            default:
                throw FetchError(code: .missingId, message: "item \(index) has no usable id at '\(p)'; check --id", url: url)
            }
        }
        let key = parts.joined(separator: ":")
        guard !key.utf8.contains(0), key.utf8.count <= 400 else {
            throw FetchError(code: .missingId, message: "item \(index) has an id that is too long or contains NUL", url: url)
        }
        return key
    }
}
