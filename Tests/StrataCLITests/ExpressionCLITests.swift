import Foundation
import StrataTestSupport
import Testing

/// The questions of the history through the real binary, on the countries fixture (ISO 3166
/// entries as a yearly scrape kept them): renames found with `changes --when`, the churning field
/// with `schema --changes`, a value's series with `history --field`, facets with `count --by`.
@Suite struct ExpressionCLITests {
    static func countries() async throws -> String {
        let store = makeStoreDir()
        let add = try await strata(
            ["source", "add", "countries", "--url", "https://www.iso.org/iso-3166.json", "--id", "alpha2", "--title", "name", "--index", "name"],
            store: store)
        #expect(add.status == 0, "\(add.stderr)")
        for year in [2015, 2017, 2019, 2023] {
            let r = try await strata(
                ["import", "countries", fixturesRoot + "/countries/\(year).json", "--recorded-at", "\(year)-06-01T00:00:00Z"], store: store)
            #expect(r.status == 0, "\(r.stderr)")
        }
        return store
    }

    @Test func renamesChurnSeriesAndFacets() async throws {
        let store = try await Self.countries()
        let renames = try await strata(["changes", "countries", "--when", "name != old.name", "--kind", "changed", "--format", "json"], store: store)
        let records = try #require(try jsonObject(renames.stdout) as? [[String: Any]], "\(renames.stderr)")
        #expect(records.map { $0["item"] as? String } == ["CZ", "MK", "SZ", "NL", "TR"])
        #expect(records.map { String(($0["observedAt"] as? String ?? "").prefix(4)) } == ["2017", "2019", "2019", "2023", "2023"])
        let first = try #require((records.first?["changes"] as? [[String: Any]])?.first)
        #expect(first["path"] as? String == "/name" && first["old"] as? String == "Czech Republic" && first["new"] as? String == "Czechia")

        let churn = try await strata(["schema", "countries", "--changes", "--format", "json"], store: store)
        let rows = try jsonObject(churn.stdout) as? [[String: Any]] ?? []
        #expect(rows.count == 1 && rows.first?["path"] as? String == "name" && rows.first?["changes"] as? Int == 5, "\(churn.stdout)")

        let series = try await strata(["history", "countries", "TR", "--field", "name", "--format", "csv"], store: store)
        #expect(series.stdout.split(separator: "\n").map { $0.split(separator: ",").last.map(String.init) } == ["value", "Turkey", "Türkiye"])

        let asOf = try await strata(
            ["list", "countries", "--where", "name in (\"Czechia\", \"Eswatini\")", "--as-of", "2018-01-01", "--format", "json"], store: store)
        #expect((try jsonObject(asOf.stdout) as? [[String: Any]])?.map { $0["id"] as? String } == ["CZ"], "\(asOf.stderr)")

        let facet = try await strata(["count", "countries", "--where", "numeric < 300", "--by", "alpha3", "--format", "csv"], store: store)
        #expect(facet.stdout == "alpha3,count\nBEL,1\nBOL,1\nCPV,1\nCZE,1\nDEU,1\nFRA,1\n", "\(facet.stdout)")
        let total = try await strata(["count", "countries"], store: store)
        #expect(total.stdout == "10 items\n")
    }

    @Test func aBadExpressionIsTheSameErrorEverywhere() async throws {
        let store = try await Self.countries()
        for args in [["list", "countries", "--where"], ["count", "countries", "--where"], ["changes", "countries", "--when"]] {
            let r = try await strata(args + ["numeric < \"a\""], store: store)
            #expect(r.status == 64 && r.stderr.contains("is not valid at 9: < compares numbers, not a text"), "\(args): \(r.stderr)")
        }
        let diff = try await strata(["diff", "countries", "--from", "1", "--when", "name ~"], store: store)
        #expect(diff.status == 64 && diff.stderr.contains("--when 'name ~' is not valid at 7"), "\(diff.stderr)")
    }
}
