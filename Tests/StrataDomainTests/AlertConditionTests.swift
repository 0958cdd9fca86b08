import StrataAdapters
import StrataDomain
import StrataJSON
import Testing

@Suite struct AlertConditionTests {
    static let old = try! JSONValue(
        parsing: Array(#"{"price": 12300, "make": "Toyota", "status": "open", "name": "Firefly", "tags": ["x"], "km": "900"}"#.utf8))
    static let new = try! JSONValue(
        parsing: Array(
            #"{"price": 11700, "make": "Toyota", "status": "closed", "name": "Firefly II", "tags": ["urgent", "x"], "sold": true, "km": "900", "n": 3}"#.utf8))

    /// Each condition against the change from `old` to `new`.
    static let cases: [(String, Bool)] = [
        ("price < 12000", true), ("price < 10000", false), ("price <= 11700", true), ("price > 11700", false), ("price >= 11700", true),
        ("old.price - price >= 500", true), ("old.price - price >= 700", false), ("price + 300 = 12000", true),
        ("make = \"Toyota\" and price < old.price", true), ("make = 'Kia' or price < old.price", true), ("make = 'Kia' or price > old.price", false),
        ("status != old.status", true), ("make != old.make", false), ("not (make = 'Kia')", true), ("not sold", false), ("sold", true),
        ("tags contains \"urgent\"", true), ("old.tags contains \"urgent\"", false), ("name ~ \"fire\"", true), ("name ~ \"ice\"", false),
        ("name contains \"II\"", true), ("missing = null", true), ("missing != null", false), ("missing < 3", false),
        ("km < 1000", false), ("km = \"900\"", true), ("n = 3.0", true), ("-price < 0", true), ("price = 11700 and (make = 'Kia' or n >= 3)", true),
        ("old.sold = null", true), ("price == 11700", true)
    ]

    @Test(arguments: cases) func evaluates(_ text: String, _ expected: Bool) throws {
        let c = try ItemExpression(parsing: text)
        #expect(c.matches(new: Self.new, old: Self.old) == expected, "\(text)")
    }

    @Test func anAddedOrRemovedItemHasNullOnItsAbsentSide() throws {
        #expect(try ItemExpression(parsing: "old.price = null and price < 20000").matches(new: Self.new, old: nil))
        #expect(try ItemExpression(parsing: "price = null").matches(new: nil, old: Self.old))
        #expect(try !ItemExpression(parsing: "price < 20000").matches(new: nil, old: Self.old))
    }

    /// Refused at `alert add` with the position and what was expected.
    static let errors: [(String, String)] = [
        ("", "at 1: expected a condition, e.g. price < 10000"),
        ("price <", "at 8: expected a value (a number, a text in quotes, a field, or a parenthesis), found the end"),
        ("price < 10000 and", "at 18: expected a value (a number, a text in quotes, a field, or a parenthesis), found the end"),
        ("(price < 3", "at 11: expected ), found the end"),
        ("price < \"cheap\"", "at 7: < compares numbers, not a text"),
        ("\"a\" - 1 = 2", "at 5: - takes numbers, not a text"),
        ("1 and price < 3", "at 3: and takes conditions, not a number"),
        ("price", ""),
        ("3", "at 1: expected a condition (a comparison, or a field that is true or false), found a number"),
        ("name ~ 3", "at 6: ~ looks for text in text, not a number"),
        ("3 contains 1", "at 3: contains looks in a list or a text, not a number"),
        ("price # 3", "at 7: unexpected \"#\""),
        ("name = \"open", "at 8: the text that starts here is not closed with \""),
        ("price < 1.2.3", "at 9: 1.2.3 is not a number"),
        ("price 3", "at 7: expected and, or or the end, found the number 3"),
        ("a..b = 1", "at 1: a..b is not a field path (names joined by single dots)"),
        ("not", "at 4: expected a value (a number, a text in quotes, a field, or a parenthesis), found the end"),
        ("price = and", "at 9: expected a value, found and")
    ]

    @Test(arguments: errors) func refusesClearly(_ text: String, _ message: String) {
        do {
            _ = try ItemExpression(parsing: text)
            #expect(message.isEmpty, "\(text) was accepted")
        } catch {
            #expect("\(error)" == message, "\(text)")
        }
    }
}
