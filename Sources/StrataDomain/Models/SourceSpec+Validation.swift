import Foundation
import StrataJSON

extension SourceSpec {
    /// Checks the spec: the problem names the field at fault and why.
    /// - Throws: ``SpecProblem``.
    package func validate() throws(SpecProblem) {
        func bad(_ field: Field, _ why: FieldText) -> SpecProblem { SpecProblem(source: name, field: field, reason: why) }
        guard !name.isEmpty, name.utf8.count <= 64,
            name.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" || $0 == "." })
        else {
            throw bad(.name, "must be 1–64 letters, digits, '-', '_' or '.'")
        }
        for p in redact where !Self.isPath(p) { throw bad(.redact, "'\(p)' is not a dotted path like email or contact.phone") }
        for h in redactHeaders where !HeaderName.isValid(h) { throw bad(.redactHeader, "'\(h)' is not a header name like X-Session") }
        if keepSeconds != nil && keepVersions != nil { throw bad(.keep, "and \(Field.keepVersions) are two retentions; pick one") }
        if let k = keepSeconds, !(60...(100 * 366 * 86_400)).contains(k) { throw bad(.keep, "must be a duration from 1m to 100 years, like 30d") }
        if let n = keepVersions, n < 1 { throw bad(.keepVersions, "must be at least 1") }
        if isRecorded && url.isEmpty { return }
        guard let u = URL(string: url), let scheme = u.scheme?.lowercased(), ["http", "https", "file"].contains(scheme),
            scheme == "file" || u.host != nil
        else {
            throw bad(.url, "must be an absolute http, https or file URL, e.g. https://api.example.com/items")
        }
        for (field, path) in [(Field.items, items), (.title, title), (.image, image), (.detailURLField, detailURLField), (.next, next)] {
            if let path, !Self.isPath(path) { throw bad(field, "'\(path)' is not a dotted path like results or data.items") }
        }
        for p in subtitle where !Self.isPath(p) { throw bad(.subtitle, "'\(p)' is not a dotted path") }
        for p in index where !Self.isPath(p) { throw bad(.index, "'\(p)' is not a dotted path") }
        for p in ignore where !Self.isPath(p) { throw bad(.ignore, "'\(p)' is not a dotted path like updated_at or meta.request_id") }
        guard !id.isEmpty else { throw bad(.id, "needs at least one path") }
        for p in id where !(p == "@key" || Self.isPath(p)) { throw bad(.id, "'\(p)' is not a dotted path or @key") }
        if id.contains("@key") && id.count > 1 { throw bad(.id, "@key cannot be combined with other paths") }
        if detailURL != nil && detailURLField != nil { throw bad(.detailURL, "and \(Field.detailURLField) cannot both be given") }
        if let schedule { try schedule.validate(source: name) }
        if let t = detailURL {
            guard t.contains("{id}") else { throw bad(.detailURL, "must contain {id}, e.g. https://api.example.com/items/{id}") }
            let detailScheme = URL(string: t.replacingOccurrences(of: "{id}", with: "1"))?.scheme?.lowercased()
            guard let detailScheme, ["http", "https", "file"].contains(detailScheme) else { throw bad(.detailURL, "must be an absolute http(s) URL") }
            guard detailScheme != "file" || scheme == "file" else { throw bad(.detailURL, "cannot be a file URL for an http(s) source") }
        }
        try validatePaging(bad)
        for (field, template, needsId) in [(Field.createURL, createURL, false), (.updateURL, updateURL, true), (.deleteURL, deleteURL, true)] {
            guard let template else { continue }
            let scheme = URL(string: template.replacingOccurrences(of: "{id}", with: "1"))?.scheme?.lowercased()
            guard scheme == "http" || scheme == "https" else { throw bad(field, "must be an absolute http(s) URL") }
            if needsId && !template.contains("{id}") { throw bad(field, "must contain {id}, e.g. https://api.example.com/items/{id}") }
        }
        if let m = updateMethod, !["PATCH", "PUT"].contains(m) { throw bad(.updateMethod, "must be PATCH or PUT") }
        if let f = patchFormat, !["json-patch", "merge-patch"].contains(f) { throw bad(.patchFormat, "must be json-patch or merge-patch") }
        if updateURL == nil, updateMethod != nil || patchFormat != nil {
            throw bad(updateMethod != nil ? .updateMethod : .patchFormat, "needs \(Field.updateURL)")
        }
        if let o = ownerField, !Self.isPath(o) { throw bad(.ownerField, "'\(o)' is not a dotted path") }
        for h in headers {
            guard let colon = h.firstIndex(of: ":"), !h[..<colon].trimmingCharacters(in: .whitespaces).isEmpty else {
                throw bad(.header, "'\(h)' must look like 'Name: value'")
            }
        }
    }

    /// The paging fields: one style, with the fields it needs.
    private func validatePaging(_ bad: (Field, FieldText) -> SpecProblem) throws(SpecProblem) {
        for (field, path) in [(Field.cursorPath, cursorPath), (.totalPath, totalPath), (.hasMorePath, hasMorePath)] {
            if let path, !Self.isPath(path) { throw bad(field, "'\(path)' is not a dotted path like meta.next_cursor") }
        }
        let params: [(Field, String?)] = [
            (.cursorParam, cursorParam), (.offsetParam, offsetParam), (.limitParam, limitParam), (.afterParam, afterParam), (.pageParam, pageParam),
            (.sizeParam, sizeParam)
        ]
        for (field, param) in params {
            if let param, param.isEmpty || param.contains(where: { "&=?# ".contains($0) }) { throw bad(field, "'\(param)' is not a query parameter name") }
        }
        let styles = [
            (Field.next, next != nil), (.pageParam, pageParam != nil), (.cursorPath, cursorPath != nil || cursorParam != nil),
            (.offsetParam, offsetParam != nil), (.afterParam, afterParam != nil)
        ].filter(\.1).map(\.0)
        if styles.count > 1 { throw bad(styles[1], "and \(styles[0]) are two paging styles; pick one") }
        if cursorPath == nil, cursorParam != nil { throw bad(.cursorParam, "needs \(Field.cursorPath) (where the next cursor is in the body)") }
        if cursorPath != nil, cursorParam == nil { throw bad(.cursorPath, "needs \(Field.cursorParam) (the parameter it is sent back in)") }
        if pageParam != nil && pageSize == nil { throw bad(.pageParam, "needs \(Field.pageSize)") }
        if offsetParam != nil && pageSize == nil { throw bad(.offsetParam, "needs \(Field.pageSize) (the limit sent with each page)") }
        if totalPath != nil && offsetParam == nil { throw bad(.totalPath, "goes with \(Field.offsetParam)") }
        if hasMorePath != nil && afterParam == nil { throw bad(.hasMorePath, "goes with \(Field.afterParam)") }
        if limitParam != nil && pageSize == nil { throw bad(.limitParam, "needs \(Field.pageSize) (its value)") }
        if limitParam != nil && pageParam != nil {
            throw bad(.limitParam, "is for cursor, offset and after-id paging; page numbers use \(Field.sizeParam)")
        }
        if pageSize != nil && styles.isEmpty {
            throw bad(
                .pageSize,
                "needs a paging style: \(Field.pageParam), \(Field.cursorPath), \(Field.offsetParam) or \(Field.afterParam); an API paged by Link headers (like GitHub's) is followed without one and takes its page size in its URL, e.g. https://api.github.com/repos/OWNER/REPO/issues?per_page=100"
            )
        }
        if let n = pageSize, !(1...10_000).contains(n) { throw bad(.pageSize, "must be 1–10000") }
    }

    /// A dotted path: no empty segment (what `--by`, `--field` and a spec's paths take).
    package static func isPath(_ p: String) -> Bool {
        !p.isEmpty && !p.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty)
    }
}

extension SourceSchedule {
    /// - Throws: ``SpecProblem`` naming the schedule's field at fault.
    func validate(source: String) throws(SpecProblem) {
        guard every.isFinite, every >= 1, every <= 366 * 86_400 else { throw SpecProblem(source: source, field: .every, reason: "must be 1s to 366d") }
        guard (0...50).contains(jitter) else { throw SpecProblem(source: source, field: .jitter, reason: "must be 0 to 50 (percent)") }
    }
}
