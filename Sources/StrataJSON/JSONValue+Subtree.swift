extension JSONValue {
    /// The value at a dotted path of a JSON text (`results`, `data.items`, `pages.0.items`), built
    /// alone: the whole text is checked as ``validate(_:)`` checks it, but only the value at the
    /// path becomes a ``JSONValue``. For a list body whose items are a minority of its bytes this
    /// is the difference between building a tree of the whole body and of the items. Answers as
    /// `JSONValue(parsing: text).value(atPath:)` does: nil when the path leads nowhere, the last of
    /// duplicate keys.
    /// - Throws: ``JSONParseError`` when the text is not JSON.
    public static func value(atPath path: String, inText text: some Collection<UInt8>) throws(JSONParseError) -> JSONValue? {
        let parts = path.isEmpty ? [] : path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let result: Result<JSONValue?, JSONParseError> = withContiguousBytes(text) { raw in
            do throws(JSONParseError) {
                var p = JSONParser(raw)
                try p.skipDocument()
                p.i = raw.count >= 3 && raw[0] == 0xEF && raw[1] == 0xBB && raw[2] == 0xBF ? 3 : 0
                p.depth = 0
                p.skipWS()
                for part in parts {
                    guard let next = try p.child(part) else { return .success(nil) }
                    p.i = next
                    p.depth = 0
                }
                return .success(try p.parseValue())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

extension JSONParser {
    /// Where the member `part` of the object (or element `part` of the array) at `i` starts; nil
    /// when there is none. The text is valid (checked before).
    mutating func child(_ part: String) throws(JSONParseError) -> Int? {
        guard i < b.count else { return nil }
        switch b[i] {
        case UInt8(ascii: "{"):
            i += 1
            skipWS()
            var found: Int?
            if i < b.count, b[i] == UInt8(ascii: "}") { return nil }
            while i < b.count {
                skipWS()
                let key = try parseString()
                skipWS()
                i += 1  // ':'
                skipWS()
                if key == part { found = i }
                try skipValue()
                skipWS()
                guard i < b.count, b[i] == UInt8(ascii: ",") else { break }
                i += 1
            }
            return found
        case UInt8(ascii: "["):
            guard let index = Int(part), index >= 0 else { return nil }
            i += 1
            skipWS()
            if i < b.count, b[i] == UInt8(ascii: "]") { return nil }
            var n = 0
            while i < b.count {
                skipWS()
                if n == index { return i }
                try skipValue()
                skipWS()
                guard i < b.count, b[i] == UInt8(ascii: ",") else { break }
                i += 1
                n += 1
            }
            return nil
        default:
            return nil
        }
    }
}
