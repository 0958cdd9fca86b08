import StrataJSON
import Testing

/// ``JSONValue/value(atPath:inText:)`` answers as parsing the whole text and reading the path
/// does: over random documents and paths, duplicate keys, arrays by index, and broken texts.
@Suite struct JSONSubtreeTests {
    @Test func aPathReadFromTheTextEqualsTheTreesAnswer() throws {
        var rng = JSONRedactionTests.SplitMix(seed: 7)
        let keys = ["a", "b", "c", "0", "1"]
        func value(_ depth: Int) -> String {
            switch rng.next() % (depth > 3 ? 3 : 6) {
            case 0: return "\"\(keys[Int(rng.next() % 5)])\""
            case 1: return String(rng.next() % 100)
            case 2: return "null"
            case 3, 4:
                // Duplicate keys happen: the last one counts.
                let n = Int(rng.next() % 4)
                return "{" + (0..<n).map { _ in "\"\(keys[Int(rng.next() % 5)])\" : \(value(depth + 1))" }.joined(separator: ", ") + "}"
            default:
                return "[ " + (0..<Int(rng.next() % 3)).map { _ in value(depth + 1) }.joined(separator: ",") + "]"
            }
        }
        for _ in 0..<2_000 {
            let text = Array(value(0).utf8)
            let path = (0..<Int(rng.next() % 3)).map { _ in keys[Int(rng.next() % 5)] }.joined(separator: ".")
            let whole = try JSONValue(parsing: text).value(atPath: path)
            #expect(try JSONValue.value(atPath: path, inText: text) == whole, "\(String(decoding: text, as: UTF8.self)) at '\(path)'")
        }
    }

    @Test func aBrokenTextIsRefusedWhereverThePathIs() {
        for bad in [#"{"a":[1,2}"#, #"{"a":1} x"#, #"{"b":1,"a":"#, ""] {
            #expect(throws: JSONParseError.self) { _ = try JSONValue.value(atPath: "a", inText: Array(bad.utf8)) }
        }
    }
}
