import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// `strata schema` over a generated history whose fields and types change, fetched from a
/// `file://` source one version at a time; drift as it happened and `alert --on drift`.
@Suite struct SchemaCLITests {
    /// 40 items; from `version` 2 on a quarter have their price as text and every item has a
    /// color; from 3 on `km` is gone.
    static func items(version: Int) -> String {
        let rows = (1...40).map { i -> String in
            var fields = [#""id": \#(i)"#, #""model": "car \#(i)""#]
            fields.append(version >= 2 && i % 4 == 0 ? #""price": "\#(1000 + i) EUR""# : #""price": \#(1000 + i)"#)
            if version < 3 { fields.append(#""km": \#(i * 100)"#) }
            if version >= 2 { fields.append(#""color": "red""#) }
            fields.append(#""owner": {"name": "n\#(i)", "since": \#(2000 + i % 20)}"#)
            fields.append(#""tags": ["a", \#(i % 2 == 0 ? "1" : "\"b\"")]"#)
            return "{" + fields.joined(separator: ", ") + "}"
        }
        return #"{"results": ["# + rows.joined(separator: ",\n") + "]}"
    }

    private func json(_ text: String) -> Any? { try? JSONSerialization.jsonObject(with: Data(text.utf8)) }

    @Test func theShapeAndItsDriftFollowTheHistory() async throws {
        let receiver = try WebhookReceiver()
        let store = makeStoreDir()
        let dir = TestScratch.path("schema-src")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let file = dir + "/cars.json"
        try Self.items(version: 1).write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try await strata(["source", "add", "cars", "--url", "file://" + file, "--items", "results", "--title", "model"], store: store).status == 0)
        #expect(try await strata(["fetch", "cars"], store: store).status == 0)
        let first = try await strata(["log", "--type", "FetchCompleted", "--format", "ndjson"], store: store).stdout
        let firstPass = (json(first) as? [String: Any])?["seq"] as? Int ?? 0
        #expect(try await strata(["alert", "add", "cars", "shape", "--on", "drift", "--webhook", receiver.url], store: store).status == 0)
        for v in 2...3 {
            try Self.items(version: v).write(toFile: file, atomically: true, encoding: .utf8)
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
        }

        // Now: price is a number in 30 items and text in 10; color in all; km gone.
        let now = try #require(json(try await strata(["schema", "cars", "--format", "json"], store: store).stdout) as? [String: Any])
        #expect(now["items"] as? Int == 40)
        let fields = Dictionary(uniqueKeysWithValues: (now["fields"] as? [[String: Any]] ?? []).map { ($0["path"] as? String ?? "", $0) })
        #expect((fields["price"]?["types"] as? [String: Int]) == ["number": 30, "string": 10])
        #expect(fields["color"]?["items"] as? Int == 40 && fields["km"] == nil)
        #expect((fields["owner.name"]?["types"] as? [String: Int]) == ["string": 40])
        #expect((fields["tags[]"]?["types"] as? [String: Int]) == ["number": 20, "string": 40])
        // Each distinct shape is kept once, not once per item: 40 items, a handful of shapes and
        // the row naming the source's anchor.
        let stats = try #require(json(try await strata(["stats", "--format", "json"], store: store).stdout) as? [String: Any])
        let schemaTables = ((stats["projections"] as? [[String: Any]])?.first { $0["name"] as? String == "schema" }?["tables"] as? [[String: Any]]) ?? []
        let shapes = try #require(schemaTables.first { $0["name"] as? String == "shapes" }?["entries"] as? Int)
        #expect(shapes >= 3 && shapes <= 9, "\(shapes) shapes kept for 40 items")
        // As of the first pass: the shape then.
        let then = try #require(
            json(try await strata(["schema", "cars", "--as-of", String(firstPass), "--format", "json"], store: store).stdout) as? [String: Any])
        let thenFields = Set((then["fields"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String })
        #expect(thenFields.contains("km") && !thenFields.contains("color"))

        // JSON Schema 2020-12: required where every item has it, the types seen.
        let schema = try #require(json(try await strata(["schema", "cars", "--format", "json-schema"], store: store).stdout) as? [String: Any])
        #expect(schema["$schema"] as? String == "https://json-schema.org/draft/2020-12/schema")
        let properties = try #require(schema["properties"] as? [String: [String: Any]])
        #expect(properties["price"]?["type"] as? [String] == ["number", "string"])
        #expect(((properties["owner"]?["properties"] as? [String: [String: Any]])?["since"])?["type"] as? String == "number")
        #expect(Set(schema["required"] as? [String] ?? []) == ["id", "model", "price", "color", "owner", "tags"])

        // Drift as it happened.
        let drift = try #require(json(try await strata(["schema", "cars", "--history", "--format", "json"], store: store).stdout) as? [[String: Any]])
        func find(_ path: String, _ kind: String) -> [String: Any]? { drift.first { $0["path"] as? String == path && $0["kind"] as? String == kind } }
        #expect(find("id", "added")?["seq"] as? Int ?? 0 < firstPass)
        let price = try #require(find("price", "typeChanged"))
        #expect(price["before"] as? [String] == ["number"] && price["after"] as? [String] == ["number", "string"] && price["example"] as? String == "1004 EUR")
        #expect(find("color", "added") != nil && find("km", "gone") != nil)
        #expect((find("km", "gone")?["seq"] as? Int ?? 0) > (price["seq"] as? Int ?? 0))
        // As of the first pass: its drifts only (the walk stops there).
        let early = try #require(
            json(try await strata(["schema", "cars", "--history", "--as-of", String(firstPass), "--format", "json"], store: store).stdout) as? [[String: Any]])
        #expect(!early.isEmpty && early.count < drift.count && early.allSatisfy { ($0["seq"] as? Int ?? .max) <= firstPass })
        let table = try await strata(["schema", "cars", "--history"], store: store)
        #expect(table.stdout.contains("number → number|string") && table.stdout.contains("gone (was number)"))

        // `--on drift`: one notification per drift after the alert.
        #expect(try await strata(["alert", "deliver"], store: store).status == 0)
        let titles = receiver.accepted.compactMap { ($0.json as? [String: Any])?["title"] as? String }.sorted()
        #expect(
            titles == ["cars: field color added (string)", "cars: field km gone (was number)", "cars: price: type changed number → number|string"], "\(titles)")
        #expect(receiver.accepted.allSatisfy { ($0.json as? [String: Any])?["kind"] as? String == "drift" })
        #expect(try await strata(["schema", "nope"], store: store).status == 3)
        #expect(try await strata(["verify"], store: store).status == 0)
    }

    /// Items that leave take their shapes out of the counts, and the count of items reads as of
    /// any pass; in an encrypted store too, and `verify` finds the schema as a rebuild writes it.
    @Test(arguments: [false, true]) func itemsThatLeaveLeaveTheCountsAsOfEachPass(encrypted: Bool) async throws {
        let store = makeStoreDir()
        let env = encrypted ? ["STRATA_KEY_FILE": TestScratch.path("schema-keys") + "/store.key"] : [:]
        if encrypted { #expect(try await strata(["init", "--encrypt"], store: store, env: env).status == 0) }
        let dir = TestScratch.path("schema-leave")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let file = dir + "/cars.json"
        // Pass 1: 40 items with km; pass 2: items 1–30; pass 3: items 1–30 and 41–45, without km.
        let passes: [[Int]] = [Array(1...40), Array(1...30), Array(1...30) + Array(41...45)]
        var seqs: [Int] = []
        #expect(
            try await strata(["source", "add", "cars", "--url", "file://" + file, "--items", "results", "--title", "model"], store: store, env: env).status
                == 0)
        for (n, ids) in passes.enumerated() {
            let rows = ids.map { i in n < 2 ? #"{"id": \#(i), "model": "car \#(i)", "km": \#(i * 100)}"# : #"{"id": \#(i), "model": "car \#(i)"}"# }
            try (#"{"results": ["# + rows.joined(separator: ",") + "]}").write(toFile: file, atomically: true, encoding: .utf8)
            #expect(try await strata(["fetch", "cars"], store: store, env: env).status == 0)
            let done = try await strata(["log", "--type", "FetchCompleted", "--limit", "1", "--format", "ndjson"], store: store, env: env).stdout
            seqs.append((json(done) as? [String: Any])?["seq"] as? Int ?? 0)
        }
        func schema(_ asOf: Int?) async throws -> (items: Int, fields: [String: Int]) {
            let args = ["schema", "cars", "--format", "json"] + (asOf.map { ["--as-of", String($0)] } ?? [])
            let out = try #require(json(try await strata(args, store: store, env: env).stdout) as? [String: Any])
            let fields = (out["fields"] as? [[String: Any]] ?? []).reduce(into: [String: Int]()) { $0[$1["path"] as? String ?? ""] = $1["items"] as? Int }
            return (out["items"] as? Int ?? -1, fields)
        }
        let expected: [(Int, [String: Int])] = [(40, ["id": 40, "model": 40, "km": 40]), (30, ["id": 30, "model": 30, "km": 30]), (35, ["id": 35, "model": 35])]
        for (seq, (items, fields)) in zip(seqs, expected) {
            let got = try await schema(seq)
            #expect(got.items == items && got.fields == fields, "as of \(seq): \(got)")
        }
        let now = try await schema(nil)
        #expect(now.items == 35 && now.fields == ["id": 35, "model": 35])
        let verify = try await strata(["verify"], store: store, env: env)
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
    }
}
