import StrataDomain
import StrataPresentation
import StrataServer
import Testing

@testable import strata

// The command line's words for what the layers below leave typed, checked against the
// executable's own wording (nothing below it names a flag or a command).

/// A bad filter is worded in each front end's own terms: the CLI's flags, the HTTP API's query
/// parameters, the browser's prompts; never another front end's.
@Suite struct FilterInputNamesTests {
    func message(_ filter: FilterViewData, _ naming: FilterInputNames) -> String {
        do {
            _ = try ItemQuery(source: "cars", filter: filter, naming: naming)
            return ""
        } catch {
            return error.message
        }
    }

    @Test func eachFrontEndNamesItsOwnInputs() {
        let badWhere = FilterViewData(wheres: ["make"])
        #expect(message(badWhere, .flags).hasPrefix("--where 'make' names a field but no condition on it"))
        #expect(message(badWhere, .queryParameters).hasPrefix("where=make names a field but no condition on it"))
        #expect(message(badWhere, .browser).hasPrefix("filter 'make' names a field but no condition on it"))
        let badExpression = FilterViewData(wheres: ["price < \"cheap\""])
        #expect(message(badExpression, .flags) == "--where 'price < \"cheap\"' is not valid at 7: < compares numbers, not a text")
        #expect(message(badExpression, .queryParameters) == "where=price < \"cheap\" is not valid at 7: < compares numbers, not a text")
        let badSort = FilterViewData(sort: "-")
        #expect(message(badSort, .flags) == "--sort needs a path, e.g. price or -price")
        #expect(message(badSort, .queryParameters) == "sort= needs a path, e.g. price or -price")
        let badPoint = FilterViewData(asOf: "last tuesday")
        #expect(message(badPoint, .flags).hasPrefix("--as-of 'last tuesday' is neither a seq nor an ISO 8601 date"))
        #expect(message(badPoint, .queryParameters).hasPrefix("as_of=last tuesday is neither a seq nor an ISO 8601 date"))
        for naming in [FilterInputNames.queryParameters, .browser] {
            for filter in [badWhere, badSort, badPoint, FilterViewData(limit: 0), FilterViewData(offset: -1)] {
                #expect(!message(filter, naming).contains("--"), "\(message(filter, naming))")
            }
        }
        #expect(message(FilterViewData(wheres: ["make=Toyota"], sort: "-price"), .queryParameters).isEmpty)
    }
}

@Suite struct ScanNoteTests {
    @Test func namesTheFieldsThatAreNotIndexedAndTheIndexThatWouldServe() {
        #expect(FilterViewData(wheres: ["make=Kia"]).scanNote(source: "cars", indexed: ["make"], wording: .cli) == nil)
        #expect(FilterViewData(wheres: ["make=Kia"], sort: "make").scanNote(source: "cars", indexed: ["make", "model"], wording: .cli) == nil)
        #expect(FilterViewData(search: "golf").scanNote(source: "cars", indexed: [], wording: .cli) == nil)
        #expect(
            FilterViewData(wheres: ["make=Kia", "fuel=ev"], sort: "-price").scanNote(source: "cars", indexed: ["make"], wording: .cli)
                == "note: `fuel`, `price` are not indexed, so every item of cars was read; `strata source change cars --index make,fuel,price` would use an index"
        )
        #expect(
            FilterViewData(wheres: ["fuel=ev", "fuel=petrol"]).scanNote(source: "cars", indexed: [], wording: .cli)?.contains("--index fuel` would") == true)
        // An index answered `make`: only the items it found were read, and the note says so.
        #expect(
            FilterViewData(wheres: ["make=Kia", "fuel=ev"], sort: "-price").scanNote(source: "cars", indexed: ["make"], usedIndex: true, wording: .cli)
                == "note: `fuel`, `price` are not indexed, so each item the index found was read to check and sort it; `strata source change cars --index make,fuel,price` would use an index"
        )
        #expect(
            FilterViewData(wheres: ["make=Kia"], sort: "price").scanNote(source: "cars", indexed: ["make"], usedIndex: true, wording: .cli)
                == "note: `price` is not indexed, so each item the index found was read to sort it; `strata source change cars --index make,price` would use an index"
        )
    }
}
