import StrataDomain
import StrataPresentation
import Testing

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
        #expect(message(badWhere, .flags) == "--where 'make' must look like PATH=VALUE, e.g. make=Toyota")
        #expect(message(badWhere, .queryParameters) == "where=make must look like PATH=VALUE, e.g. make=Toyota")
        #expect(message(badWhere, .browser) == "filter 'make' must look like PATH=VALUE, e.g. make=Toyota")
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
