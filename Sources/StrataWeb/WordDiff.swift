/// Word-level differences between two texts: each side's words, marked where they are not in
/// the other (a longest common subsequence of words, whitespace kept with them).
enum WordDiff {
    static func words(_ s: String) -> [String] {
        var out: [String] = []
        var current = String.UnicodeScalarView()
        for u in s.unicodeScalars {
            current.append(u)
            if u.properties.isWhitespace {
                out.append(String(current))
                current = String.UnicodeScalarView()
            }
        }
        if !current.isEmpty { out.append(String(current)) }
        return out
    }

    /// A part of a text: `same`, `gone` or `added`, the other two false (the template asks for
    /// all three; a missing key is looked for in every enclosing context).
    static func part(_ kind: String, _ text: String) -> [String: Any] {
        ["same": kind == "same", "gone": kind == "gone", "added": kind == "added", "text": text]
    }

    /// The parts of the old text (`same` or `gone`) and of the new one (`same` or `added`). The
    /// words both texts start and end with are one `same` part each; only the middle between
    /// them is compared (an edit of a few words in a long text is a few words to compare, not
    /// the whole text against itself). Middles of more than 2,000 words each are marked whole:
    /// the table is quadratic.
    static func parts(_ old: String, _ new: String) -> ([[String: Any]], [[String: Any]]) {
        let a = words(old), b = words(new)
        var head = 0
        while head < a.count, head < b.count, a[head] == b[head] { head += 1 }
        var tail = 0
        while tail < a.count - head, tail < b.count - head, a[a.count - 1 - tail] == b[b.count - 1 - tail] { tail += 1 }
        let x = Array(a[head..<(a.count - tail)]), y = Array(b[head..<(b.count - tail)])
        var left = Runs(), right = Runs()
        left.add("same", a[..<head])
        right.add("same", b[..<head])
        if x.count > 2_000 || y.count > 2_000 {
            left.add("gone", x[...])
            right.add("added", y[...])
        } else {
            // lcs[i * (m + 1) + j]: the longest common subsequence of x[i...] and y[j...]. Words
            // are compared as numbers: the table compares every pair.
            var numbers: [String: Int32] = [:]
            func number(_ word: String) -> Int32 {
                if let n = numbers[word] { return n }
                numbers[word] = Int32(numbers.count)
                return Int32(numbers.count - 1)
            }
            let xn = x.map(number), yn = y.map(number)
            let m = y.count
            var lcs = [Int32](repeating: 0, count: (x.count + 1) * (m + 1))
            for i in stride(from: x.count - 1, through: 0, by: -1) {
                for j in stride(from: m - 1, through: 0, by: -1) {
                    lcs[i * (m + 1) + j] = xn[i] == yn[j] ? lcs[(i + 1) * (m + 1) + j + 1] + 1 : max(lcs[(i + 1) * (m + 1) + j], lcs[i * (m + 1) + j + 1])
                }
            }
            var i = 0, j = 0
            while i < x.count || j < m {
                if i < x.count, j < m, xn[i] == yn[j] {
                    left.add("same", x[i...i]); right.add("same", y[j...j]); i += 1; j += 1
                } else if j < m, i == x.count || lcs[i * (m + 1) + j + 1] >= lcs[(i + 1) * (m + 1) + j] {
                    right.add("added", y[j...j]); j += 1
                } else {
                    left.add("gone", x[i...i]); i += 1
                }
            }
        }
        left.add("same", a[(a.count - tail)...])
        right.add("same", b[(b.count - tail)...])
        return (left.parts, right.parts)
    }

    /// Parts built word by word: a run of one kind is one part, its words joined once at the end.
    struct Runs {
        private var runs: [(kind: String, words: [String])] = []

        mutating func add(_ kind: String, _ words: ArraySlice<String>) {
            guard !words.isEmpty else { return }
            if runs.last?.kind == kind { runs[runs.count - 1].words += words } else { runs.append((kind, Array(words))) }
        }

        var parts: [[String: Any]] { runs.map { WordDiff.part($0.kind, $0.words.joined()) } }
    }
}
