package import StrataDomain
package import StrataJSON

/// What `strata bisect` prints: where the check starts failing, what changed there, and how to
/// reproduce it.
package struct BisectRenderer: Sendable {
    /// How the front end offers the next step (the whole diff).
    let wording: FrontEndWording

    package init(wording: FrontEndWording) { self.wording = wording }

    package static func word(_ v: ProbeVerdict) -> String {
        switch v {
        case .good: "good"
        case .bad(let code): "bad (exit \(code))"
        case .skip: "skipped (exit 125)"
        case .abort(let code): "stopped (exit \(code))"
        }
    }

    static func describe(_ p: BisectPoint) -> String {
        var s = "seq \(p.seq)"
        if let at = p.observedAt { s += " (\(ISOTime.format(at)))" }
        if let c = p.change {
            switch c.kind {
            case .fetchRun: s += ", fetch run \(c.label) of \(c.source)"
            case .exchange: s += ", \(c.label) recorded in \(c.source)"
            }
        } else {
            s += ", the given point"
        }
        return s
    }

    package func render(_ r: BisectResult, reproduce: String) -> String {
        var lines = [
            "first bad: \(Self.describe(r.firstBad))",
            "last good: \(Self.describe(r.lastGood))",
            "steps: \(r.steps) (\(r.candidates) candidate\(r.candidates == 1 ? "" : "s"); \(r.checks.count) runs with the two given points)"
        ]
        if r.itemChanges.isEmpty && r.responseChanges.isEmpty { lines.append("changes: none recorded between them") }
        for d in r.itemChanges {
            lines.append(
                "items of \(d.source), seq \(d.fromSeq) → \(d.toSeq): +\(d.count(.added)) added, ~\(d.count(.changed)) changed, -\(d.count(.removed)) removed")
            for item in d.items.prefix(20) {
                let mark = item.kind == .added ? "+" : item.kind == .removed ? "-" : "~"
                lines.append("  \(mark) \(item.id)  \(item.title)")
                for c in item.changes.prefix(10) {
                    lines.append("      \(c.path): \(c.old?.canonicalString ?? "∅") → \(c.new?.canonicalString ?? "∅")")
                }
            }
            if d.items.count > 20 {
                let whole = wording.next(.showDiff(source: d.source, from: d.fromSeq, to: d.toSeq))
                lines.append("  … \(d.items.count - 20) more" + (whole.map { " (\($0))" } ?? ""))
            }
        }
        if !r.responseChanges.isEmpty { lines.append("recorded answers that changed:") }
        for c in r.responseChanges.prefix(30) {
            let before = c.previousSeq.map { "seq \($0) \(c.previousStatus.map(String.init) ?? "failed")" } ?? "none before"
            let now = "seq \(c.seq) \(c.status.map(String.init) ?? "failed")"
            lines.append("  \(c.request): \(before) → \(now)\(c.bodyChanged && c.previousSeq != nil ? ", body changed" : "")")
        }
        if r.responseChanges.count > 30 { lines.append("  … \(r.responseChanges.count - 30) more") }
        lines.append("reproduce: \(reproduce)")
        return lines.joined(separator: "\n")
    }
}

extension JSONValue {
    static func point(_ p: BisectPoint) -> JSONValue {
        var o: [String: JSONValue] = ["seq": .number(String(p.seq)), "observedAt": p.observedAt.map { .string(ISOTime.format($0)) } ?? .null]
        if let c = p.change {
            o["source"] = .string(c.source)
            o["kind"] = .string(c.kind.rawValue)
            o[c.kind == .fetchRun ? "run" : "request"] = .string(c.label)
        }
        return .object(o)
    }

    /// A bisect's result as `strata bisect --format json` prints it.
    package init(bisect r: BisectResult, reproduce: String) {
        var changes: [JSONValue] = []
        for d in r.itemChanges {
            for item in d.items {
                guard case .object(var o) = JSONValue(diff: item) else { continue }
                o["source"] = .string(d.source)
                o["type"] = .string("item")
                changes.append(.object(o))
            }
        }
        for c in r.responseChanges {
            changes.append(
                .object([
                    "type": .string("response"), "source": .string(c.source), "request": .string(c.request), "seq": .number(String(c.seq)),
                    "status": c.status.map { .number(String($0)) } ?? .null, "previousSeq": c.previousSeq.map { .number(String($0)) } ?? .null,
                    "previousStatus": c.previousStatus.map { .number(String($0)) } ?? .null, "bodyChanged": .bool(c.bodyChanged)
                ]))
        }
        let checks: [JSONValue] = r.checks.map { check in
            var o: [String: JSONValue] = ["seq": .number(String(check.seq))]
            switch check.verdict {
            case .good: o["verdict"] = .string("good"); o["exit"] = .number("0")
            case .bad(let c): o["verdict"] = .string("bad"); o["exit"] = .number(String(c))
            case .skip: o["verdict"] = .string("skip"); o["exit"] = .number("125")
            case .abort(let c): o["verdict"] = .string("abort"); o["exit"] = .number(String(c))
            }
            return .object(o)
        }
        self = .object([
            "firstBad": .point(r.firstBad), "lastGood": .point(r.lastGood), "steps": .number(String(r.steps)),
            "candidates": .number(String(r.candidates)), "checks": .array(checks), "changes": .array(changes), "reproduce": .string(reproduce)
        ])
    }
}
