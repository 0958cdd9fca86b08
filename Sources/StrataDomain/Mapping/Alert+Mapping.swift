import Foundation
package import StrataJSON

extension AlertNotification {
    /// The JSON a webhook receives and an exec reads on stdin:
    /// `{"id", "alert", "source", "item", "kind", "seq", "observedAt", "title", "changes": [{"path", "old", "new"}], "url"}`.
    package var json: JSONValue {
        .object([
            "id": .string(id), "alert": .string(alert), "source": .string(source), "item": .string(item), "kind": .string(kind),
            "seq": .number(String(seq)), "observedAt": .string(observedAt.formatted(.iso8601)), "title": .string(title),
            "changes": .array(
                changes.map { c in
                    .object(["path": .string(c.path), "old": c.old ?? .null, "new": c.new ?? .null])
                }),
            "url": .string(url)
        ])
    }

    package var body: [UInt8] { json.canonicalBytes }

    /// A notification from its JSON; nil when it is not one.
    package init?(json: JSONValue) {
        func s(_ k: String) -> String? { if case .string(let v)? = json.value(atPath: k) { v } else { nil } }
        guard let id = s("id"), let alert = s("alert"), let source = s("source"), let item = s("item"),
            let kind = s("kind"), case .number(let seq)? = json.value(atPath: "seq"), let seq = UInt64(seq)
        else { return nil }
        let observedAt = s("observedAt").flatMap { try? Date($0, strategy: .iso8601) } ?? Date(timeIntervalSince1970: 0)
        var changes: [Change] = []
        if case .array(let a)? = json.value(atPath: "changes") {
            for c in a {
                guard case .string(let path)? = c.value(atPath: "path") else { continue }
                let old = c.value(atPath: "old").flatMap { $0 == .null ? nil : $0 }
                let new = c.value(atPath: "new").flatMap { $0 == .null ? nil : $0 }
                changes.append(Change(kind: old == nil ? .added : new == nil ? .removed : .replaced, path: path, old: old, new: new))
            }
        }
        self.init(
            id: id, alert: alert, source: source, item: item, kind: kind, seq: seq, observedAt: observedAt, title: s("title") ?? item,
            changes: changes, url: s("url") ?? "")
    }
}

extension Alert {
    /// The stored definition: `{"on", "fields", "when"?, "webhook"? , "exec"?}`.
    package var definition: JSONValue {
        var o: [String: JSONValue] = [
            "on": .array(ChangeKind.allCases.filter { kinds.contains($0) }.map { .string($0.rawValue) } + (onDrift ? [.string("drift")] : [])),
            "fields": .array(fields.map { .string($0) })
        ]
        if let condition { o["when"] = .string(condition.text) }
        switch target {
        case .webhook(let url): o["webhook"] = .string(url.absoluteString)
        case .exec(let command): o["exec"] = .string(command)
        }
        return .object(o)
    }

    /// An alert from its stored definition; nil when the definition is not one.
    package init?(source: String, name: String, definition: JSONValue) {
        func strings(_ key: String) -> [String] {
            if case .array(let a)? = definition.value(atPath: key) { a.compactMap { if case .string(let s) = $0 { s } else { nil } } } else { [] }
        }
        let target: AlertTarget
        if case .string(let u)? = definition.value(atPath: "webhook"), let url = URL(string: u) {
            target = .webhook(url)
        } else if case .string(let command)? = definition.value(atPath: "exec") {
            target = .exec(command)
        } else {
            return nil
        }
        var condition: ItemExpression?
        if case .string(let text)? = definition.value(atPath: "when") {
            guard let c = try? ItemExpression(parsing: text) else { return nil }
            condition = c
        }
        let on = strings("on")
        self.init(
            source: source, name: name, kinds: on.isEmpty ? Set(ChangeKind.allCases) : Set(on.compactMap(ChangeKind.init(rawValue:))),
            fields: strings("fields"), condition: condition, target: target, onDrift: on.contains("drift"))
    }
}
