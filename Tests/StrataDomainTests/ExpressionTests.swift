import StrataDomain
import StrataJSON
import Testing

/// The expression language's additions over an alert's `--when`: `in`, `= null` for an absent
/// field, `*` and `/`, paths through arrays, and limits that refuse hostile input.
@Suite struct ExpressionTests {
    static let car = try! JSONValue(
        parsing: #"{"make":"Kia","price":9000,"tags":["ev","city"],"labels":[{"name":"bug"},{"name":"ui"}],"seller":{"city":"Gent"},"km":null}"#)

    @Test(arguments: [
        ("make in (\"Kia\", \"Toyota\")", true), ("make in (\"Toyota\")", false), ("price in (1, 9000)", true),
        ("seller.email = null", true), ("km = null", true), ("price = null", false), ("seller.email != null", false),
        ("price * 2 > 17000", true), ("price / 3 = 3000", true), ("price / 0 = null", true),
        ("tags = \"ev\"", true), ("tags contains \"city\"", true), ("tags contains \"c\"", false), ("labels.name = \"ui\"", true),
        ("labels.name != \"bug\"", false), ("labels.name != \"docs\"", true), ("not (make = \"Kia\")", false),
        ("price >= 9000 and price < 9001", true), ("9000 <= price", true)
    ])
    func answers(_ text: String, _ expected: Bool) throws {
        #expect(try ItemExpression(parsing: text).matches(Self.car) == expected, "\(text)")
    }

    @Test(arguments: [
        ("price < 1e400", "at 9: 1e400 is too large a number"),
        ("make in \"Kia\"", "at 9: expected ( and a list of values after in, found the text \"Kia\""),
        ("make in (\"Kia\" \"Ford\")", "at 16: expected , or ) in the list after in, found the text \"Ford\""),
        ("price * \"x\" = 1", "at 7: * takes numbers, not a text")
    ])
    func refusesClearly(_ text: String, _ message: String) {
        #expect { try ItemExpression(parsing: text) } throws: { "\($0)" == message }
    }

    @Test func hostileInputIsRefusedNotFollowed() {
        let deep = String(repeating: "(", count: 2_000) + "price < 1" + String(repeating: ")", count: 2_000)
        #expect { try ItemExpression(parsing: deep) } throws: { "\($0)".contains("nests deeper than 64 levels") }
        let nots = String(repeating: "not ", count: 1_000) + "price < 1"
        #expect { try ItemExpression(parsing: nots) } throws: { "\($0)".contains("nests deeper") }
        let long = (0..<100_000).map { "price < \($0)" }.joined(separator: " or ")
        #expect { try ItemExpression(parsing: long) } throws: { "\($0)".contains("longer than 16384 characters") }
    }

    @Test func constraintsAreWhatAnIndexCanAnswer() throws {
        let e = try ItemExpression(parsing: "make in (\"Kia\", \"Ford\") and price >= 5000 and price < 9000 and 100 < price and (rating > 4 or x = 1)")
        #expect(
            e.indexConstraints == [
                .equals(path: "make", values: [.string("Kia"), .string("Ford")]),
                .range(path: "price", lower: .init(value: 5000, inclusive: true), upper: .init(value: 9000, inclusive: false))
            ])
        #expect(e.paths == ["make", "price", "rating", "x"])
        #expect(try ItemExpression(parsing: "make = \"Kia\" or price < 3").indexConstraints.isEmpty)
    }

    @Test func theFirstWhereKeepsItsMeaning() {
        #expect(FieldFilter(legacy: "make=Toyota") == FieldFilter(path: "make", value: "Toyota"))
        #expect(FieldFilter(legacy: "model=Yaris Cross") == FieldFilter(path: "model", value: "Yaris Cross"))
        #expect(FieldFilter(legacy: "specs.fuel=a=b") == FieldFilter(path: "specs.fuel", value: "a=b"))
        #expect(FieldFilter(legacy: "price < 10000") == nil)
        #expect(FieldFilter(legacy: "make = \"Kia\"") == nil)
        #expect(FieldFilter(legacy: "make=\"Kia\"") == nil)
        #expect(FieldFilter(legacy: "make=Kia and price<5") == nil)
    }
}
