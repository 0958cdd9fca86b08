import StrataDomain
import Testing

/// A spec that cannot be defined names the field at fault, typed, so each front end words it.
struct SpecValidationTests {
    @Test(arguments: [
        (SourceSpec(name: "s", url: "http://x/a", pageSize: 5, cursorPath: "meta.next"), SourceSpec.Field.cursorPath),
        (SourceSpec(name: "s", url: "http://x/a", cursorParam: "c"), .cursorParam),
        (SourceSpec(name: "s", url: "http://x/a", offsetParam: "offset"), .offsetParam),
        (SourceSpec(name: "s", url: "http://x/a", pageSize: 5, totalPath: "total"), .totalPath),
        (SourceSpec(name: "s", url: "http://x/a", pageSize: 5, hasMorePath: "has_more"), .hasMorePath),
        (SourceSpec(name: "s", url: "http://x/a", next: "next", pageSize: 5, afterParam: "after"), .afterParam),
        (SourceSpec(name: "s", url: "http://x/a", pageSize: 5), .pageSize),
        (SourceSpec(name: "s", url: "http://x/a", pageSize: 5, cursorPath: "a..b", cursorParam: "c"), .cursorPath),
        (SourceSpec(name: "s", url: "http://x/a", pageSize: 5, offsetParam: "off set"), .offsetParam)
    ])
    func pagingValidationNamesTheField(_ spec: SourceSpec, _ field: SourceSpec.Field) {
        #expect { try spec.validate() } throws: { ($0 as? SpecProblem)?.field == field }
    }

    @Test func aProblemMentionsOtherFieldsTypedAndNeverAFlag() throws {
        let spec = SourceSpec(name: "s", url: "http://x/a", pageParam: "page")
        do throws(SpecProblem) {
            try spec.validate()
            Issue.record("a page parameter without a page size was accepted")
        } catch {
            #expect(error.field == .pageParam)
            #expect(error.reason.parts.contains(.field(.pageSize)))
            #expect(error.description == "source s: pageParam needs pageSize")
            #expect(error.worded { "<\($0.rawValue)>" } == "source s: <pageParam> needs <pageSize>")
            #expect(!error.description.contains("--"))
        }
    }

    @Test(arguments: [
        (SourceSpec(name: "x", url: "ftp://host/list"), SourceSpec.Field.url, "must be an absolute http, https or file URL"),
        (SourceSpec(name: "bad name", url: "http://h/l"), .name, "letters, digits"),
        (SourceSpec(name: "x", url: "http://h/l", items: "a..b"), .items, "is not a dotted path"),
        (SourceSpec(name: "x", url: "http://h/l", detailURL: "http://h/items"), .detailURL, "{id}"),
        (SourceSpec(name: "x", url: "http://h/l", pageParam: "page"), .pageParam, "needs pageSize"),
        (SourceSpec(name: "x", url: "http://h/l", id: ["@key", "id"]), .id, "@key cannot be combined"),
        (SourceSpec(name: "x", url: "http://h/l", headers: ["NoColon"]), .header, "must look like 'Name: value'")
    ])
    func eachRuleNamesItsField(_ spec: SourceSpec, _ field: SourceSpec.Field, _ why: String) {
        #expect { try spec.validate() } throws: { e in
            guard let p = e as? SpecProblem else { return false }
            return p.field == field && p.description.contains(why)
        }
    }

    /// An http(s) source cannot name a file for its details: a server's ids never reach the disk.
    @Test func detailURLsCannotEscapeToFiles() {
        let spec = SourceSpec(name: "x", url: "http://127.0.0.1:8080/pokedex/pokemon", detailURL: "file:///etc/{id}")
        #expect { try spec.validate() } throws: { ($0 as? SpecProblem)?.field == .detailURL }
    }

    @Test func aValidSpecPasses() throws {
        try SourceSpec(name: "cars", url: "https://api.example.com/cars", items: "results", pageParam: "page", pageSize: 10).validate()
    }
}
