/// Word-level differences between two texts: each side's words, marked where they are not in
/// the other (a longest common subsequence of words, whitespace kept with them).
enum WordDiff {
    static func words(_ s: String) -> [String] {
        var out: [String] = []
        var current = ""
        for ch in s {
            current.append(ch)
            if ch.isWhitespace { out.append(current); current = "" }
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// A part of a text: `same`, `gone` or `added`, the other two false (the template asks for
    /// all three; a missing key is looked for in every enclosing context).
    static func part(_ kind: String, _ text: String) -> [String: Any] {
        ["same": kind == "same", "gone": kind == "gone", "added": kind == "added", "text": text]
    }

    /// The parts of the old text (`same` or `gone`) and of the new one (`same` or `added`). Texts
    /// of more than 2,000 words each are marked whole: the table is quadratic.
    static func parts(_ old: String, _ new: String) -> ([[String: Any]], [[String: Any]]) {
        let a = words(old), b = words(new)
        guard a.count <= 2_000, b.count <= 2_000 else { return ([part("gone", old)], [part("added", new)]) }
        // lcs[i][j]: the longest common subsequence of a[i...] and b[j...].
        var lcs = [[Int32]](repeating: [Int32](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : max(lcs[i + 1][j], lcs[i][j + 1])
            }
        }
        var left: [[String: Any]] = [], right: [[String: Any]] = []
        func add(_ list: inout [[String: Any]], _ key: String, _ text: String) {
            if let last = list.last, last[key] as? Bool == true, let t = last["text"] as? String {
                list[list.count - 1]["text"] = t + text
            } else {
                list.append(part(key, text))
            }
        }
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if i < a.count, j < b.count, a[i] == b[j] {
                add(&left, "same", a[i]); add(&right, "same", b[j]); i += 1; j += 1
            } else if j < b.count, i == a.count || lcs[i][j + 1] >= lcs[i + 1][j] {
                add(&right, "added", b[j]); j += 1
            } else {
                add(&left, "gone", a[i]); i += 1
            }
        }
        return (left, right)
    }
}
