package import StrataJSON
import Foundation

/// What a user asks to change in one item: fields to set and to remove, an RFC 6902 patch, or a
/// whole new document (an editor's saved text). Applied in that order.
package struct ItemEdit: Sendable, Hashable {
    /// Dotted paths (or JSON Pointers) and their new values; missing objects on the way are made.
    package var sets: [(path: String, value: JSONValue)]
    package var unsets: [String]
    /// An RFC 6902 patch document (`test` operations included).
    package var patch: JSONValue?
    package var document: JSONValue?

    package init(sets: [(path: String, value: JSONValue)] = [], unsets: [String] = [], patch: JSONValue? = nil, document: JSONValue? = nil) {
        self.sets = sets; self.unsets = unsets; self.patch = patch; self.document = document
    }

    package static func == (a: ItemEdit, b: ItemEdit) -> Bool {
        a.sets.map(\.path) == b.sets.map(\.path) && a.sets.map(\.value) == b.sets.map(\.value) && a.unsets == b.unsets
            && a.patch == b.patch && a.document == b.document
    }

    package func hash(into h: inout Hasher) { h.combine(sets.map(\.path)); h.combine(unsets) }

    package var isEmpty: Bool { sets.isEmpty && unsets.isEmpty && patch == nil && document == nil }

    /// `PATH=VALUE`: the value as JSON when it is JSON (`12`, `true`, `"12"`, `{"a":1}`), else
    /// text. Throws ``RepositoryError`` `invalidQuery` naming `what` (a flag, a prompt).
    package static func assignment(_ text: String, what: String = "the assignment") throws -> (path: String, value: JSONValue) {
        guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
            throw RepositoryError(.invalidQuery, "\(what) '\(text)' must look like PATH=VALUE, e.g. content=hello or price=12")
        }
        let raw = String(text[text.index(after: eq)...])
        return (String(text[..<eq]).trimmingCharacters(in: .whitespaces), (try? JSONValue(parsing: raw)) ?? .string(raw))
    }

    /// An edit typed on one line: `price=11500; -pros; seller.city=Lyon` sets and removes
    /// fields (`-PATH` removes one); `;` inside double quotes is text. A line that is a JSON
    /// object replaces the whole document.
    package static func line(_ text: String) throws -> ItemEdit {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("{"), let doc = try? JSONValue(parsing: trimmed), case .object = doc { return ItemEdit(document: doc) }
        var edit = ItemEdit()
        for part in splitOutsideQuotes(trimmed, on: ";") {
            let p = part.trimmingCharacters(in: .whitespaces)
            if p.isEmpty { continue }
            if p.hasPrefix("-"), !p.contains("=") { edit.unsets.append(String(p.dropFirst())) } else { edit.sets.append(try assignment(p, what: "the edit")) }
        }
        guard !edit.isEmpty else { throw RepositoryError(.invalidQuery, "type PATH=VALUE (several: a=1; b=text), -PATH to remove one, or a JSON object") }
        return edit
    }

    /// The value as an edit line shows it, so that parsing it back gives the same value:
    /// text as text unless it would read as JSON, everything else as compact JSON.
    package static func editable(_ value: JSONValue) -> String {
        if case .string(let s) = value, (try? JSONValue(parsing: s)) == nil, !s.contains(";") { return s }
        return value.canonicalString
    }

    static func splitOutsideQuotes(_ text: String, on separator: Character) -> [String] {
        var parts: [String] = [], current = "", quoted = false, escaped = false
        for c in text {
            if escaped { current.append(c); escaped = false; continue }
            if c == "\\", quoted { current.append(c); escaped = true; continue }
            if c == "\"" { quoted.toggle() }
            if c == separator, !quoted { parts.append(current); current = "" } else { current.append(c) }
        }
        parts.append(current)
        return parts
    }

    /// The document with the edit applied. Throws ``RepositoryError`` `invalidQuery` saying which
    /// part does not apply.
    package func applied(to doc: JSONValue) throws -> JSONValue {
        var out = doc
        for (path, value) in sets {
            do { try out.set(value, at: try JSONPointer(JSONValue.pointer(fromPath: path))) } catch {
                throw RepositoryError(.invalidQuery, "setting \(path): \(error.message)")
            }
        }
        for path in unsets {
            let pointer: JSONPointer
            do { pointer = try JSONPointer(JSONValue.pointer(fromPath: path)) } catch {
                throw RepositoryError(.invalidQuery, "removing \(path): \(error.message)")
            }
            guard !pointer.tokens.isEmpty, out.value(at: pointer) != nil else {
                throw RepositoryError(.invalidQuery, "removing \(path): the item has no such field")
            }
            do { out = try out.applying([PatchOperation(op: .remove, path: pointer.text)]) } catch {
                throw RepositoryError(.invalidQuery, "removing \(path): \(error.reason)")
            }
        }
        if let patch {
            do { out = try out.applying(patchDocument: patch) } catch {
                throw RepositoryError(.invalidQuery, "the patch does not apply: \(error.description)")
            }
        }
        if let document { out = document }
        return out
    }
}
