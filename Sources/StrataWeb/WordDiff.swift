/// Word-level differences between two texts: each side's words, marked where they are not in
/// the other (a longest common subsequence of words, whitespace kept with them).
///
/// Works on the texts' UTF-8 bytes: a word is a range of bytes, words are compared byte for
/// byte, and a run of words of one kind is one slice of its text, not words joined again. An
/// item page of long texts diffs thousands of words; as `Character`s and strings this was a
/// quarter of the page's time.
enum WordDiff {
    /// A run of a side's text that is in both (`plain`), then one that is not (`marked`, nil at
    /// the end of a side when nothing follows): a cell is a list of these, two lookups a pair
    /// for the template instead of four for each part.
    struct Pair: Equatable {
        var plain: String
        var marked: String?

        /// The template's context: `marked` false when absent (a missing key is looked for in
        /// every enclosing context).
        var context: [String: Any] { ["plain": Shown(plain), "marked": marked.map(Shown.init) ?? false] }
    }

    /// A word's bytes as a dictionary key, hashed once (FNV-1a) and fed to the table's hasher as
    /// one number: the standard hasher over every byte was a fifth of a diff.
    struct Word: Hashable {
        let bytes: ArraySlice<UInt8>
        let hash: UInt64

        init(_ bytes: ArraySlice<UInt8>) {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            self.bytes = bytes
            self.hash = h
        }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
        static func == (a: Word, b: Word) -> Bool { a.hash == b.hash && a.bytes.elementsEqual(b.bytes) }
    }

    /// The words of `s`, each up to and including a whitespace character.
    static func words(_ s: String) -> [String] {
        let bytes = Array(s.utf8)
        return bounds(bytes).map { String(decoding: bytes[$0], as: UTF8.self) }
    }

    /// Where each word of `text` lies: a word ends after a whitespace scalar (ASCII ones by their
    /// byte; others, rare, by their Unicode property).
    static func bounds(_ text: [UInt8]) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var start = 0, i = 0
        while i < text.count {
            let b = text[i]
            var length = 1, space = false
            if b < 0x80 {
                space = b == 0x20 || (0x09...0x0D).contains(b)
            } else {
                // A lead byte and its continuation bytes; the text is valid UTF-8 (a String's).
                length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2
                var value = UInt32(b) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
                for k in 1..<length where i + k < text.count { value = value << 6 | UInt32(text[i + k] & 0x3F) }
                space = Unicode.Scalar(value)?.properties.isWhitespace ?? false
            }
            i = min(i + length, text.count)
            if space {
                out.append(start..<i)
                start = i
            }
        }
        if start < text.count { out.append(start..<text.count) }
        return out
    }

    /// The old text as runs in both and `gone`, the new one as runs in both and `added`. The
    /// words both texts start and end with are compared away first; the middles by Myers'
    /// greedy algorithm, whose time grows with the words that differ, not with the product of
    /// the middles' lengths (a table of a long text's 600 words against 600 others was most
    /// of an item page), line by line first (``align(_:_:_:_:)``). Runs that differ in more
    /// than ``limit(_:_:)`` words are marked whole.
    static func parts(_ old: String, _ new: String) -> ([Pair], [Pair]) {
        let a = Array(old.utf8), b = Array(new.utf8)
        let aw = bounds(a), bw = bounds(b)
        func same(_ i: Int, _ j: Int) -> Bool { a[aw[i]].elementsEqual(b[bw[j]]) }
        var head = 0
        while head < aw.count, head < bw.count, same(head, head) { head += 1 }
        var tail = 0
        while tail < aw.count - head, tail < bw.count - head, same(aw.count - 1 - tail, bw.count - 1 - tail) { tail += 1 }
        let x = head..<(aw.count - tail), y = head..<(bw.count - tail)
        // Each side's words as kept (true) or marked (false), in order.
        var keptA = [Bool](repeating: true, count: aw.count), keptB = [Bool](repeating: true, count: bw.count)
        if !x.isEmpty || !y.isEmpty {
            // Words compared as numbers: the walk compares many pairs.
            var numbers: [Word: Int32] = [:]
            func number(_ word: ArraySlice<UInt8>) -> Int32 {
                let key = Word(word)
                if let n = numbers[key] { return n }
                let n = Int32(numbers.count)
                numbers[key] = n
                return n
            }
            let xn = x.map { number(a[aw[$0]]) }, yn = y.map { number(b[bw[$0]]) }
            // A word ends a line when its whitespace is a line feed.
            let xEnds = x.map { a[aw[$0].upperBound - 1] == 0x0A }, yEnds = y.map { b[bw[$0].upperBound - 1] == 0x0A }
            if let (gone, added) = align(xn, xEnds, yn, yEnds) {
                for i in gone { keptA[head + i] = false }
                for j in added { keptB[head + j] = false }
            } else {
                for i in x { keptA[i] = false }
                for j in y { keptB[j] = false }
            }
        }
        return (pairs(a, aw, keptA), pairs(b, bw, keptB))
    }

    /// More differing lines than this and a middle is marked whole: the walk's time grows with
    /// the product of it and the lengths, its trace with its square.
    static let maxEdits = 400

    /// The most words a run of `n` words and one of `m` may differ in and still be compared
    /// word by word: a third of them (at least 8, at most ``maxEdits``), so the two share at
    /// least two words in three. Past that the run was rewritten, and marked whole: a hundred
    /// scattered marks in a rewritten paragraph say less than one mark over it (GitHub marks
    /// words only in lines that stayed alike), and the walk that finds it out stops early.
    static func limit(_ n: Int, _ m: Int) -> Int { min(maxEdits, max(8, (n + m) / 3)) }

    /// The words of `x` to mark gone and of `y` to mark added (`xEnds`, `yEnds`: which words end
    /// a line). Texts of several lines are aligned line by line first, then word by word within
    /// each run of lines that differ, as `git diff --word-diff` does with its hunks: a text
    /// rewritten paragraph by paragraph (an incident's report of 900 words, 600 of them new) is
    /// a few hunks of a few dozen words each, not one walk of a thousand edits. Nil when the
    /// lines differ in more than ``maxEdits`` places, or the one line in more than its limit.
    static func align(_ x: [Int32], _ xEnds: [Bool], _ y: [Int32], _ yEnds: [Bool]) -> (gone: [Int], added: [Int])? {
        func lines(_ ends: [Bool]) -> [Range<Int>] {
            var out: [Range<Int>] = [], start = 0
            for (i, end) in ends.enumerated() where end {
                out.append(start..<(i + 1))
                start = i + 1
            }
            if start < ends.count { out.append(start..<ends.count) }
            return out
        }
        let xl = lines(xEnds), yl = lines(yEnds)
        guard xl.count > 1 || yl.count > 1 else { return edits(x, y, limit: limit(x.count, y.count)) }
        var ids: [ArraySlice<Int32>: Int32] = [:]
        func id(_ line: ArraySlice<Int32>) -> Int32 {
            if let n = ids[line] { return n }
            let n = Int32(ids.count)
            ids[line] = n
            return n
        }
        let xi = xl.map { id(x[$0]) }, yi = yl.map { id(y[$0]) }
        guard let (goneLines, addedLines) = edits(xi, yi, limit: maxEdits) else { return nil }
        let goneSet = Set(goneLines), addedSet = Set(addedLines)
        var gone: [Int] = [], added: [Int] = []
        var i = 0, j = 0
        while i < xl.count || j < yl.count {
            if i < xl.count, j < yl.count, !goneSet.contains(i), !addedSet.contains(j) {
                i += 1; j += 1
                continue
            }
            // A hunk: the lines gone from i on and those added from j on, compared word by word.
            let i0 = i, j0 = j
            while i < xl.count, goneSet.contains(i) { i += 1 }
            while j < yl.count, addedSet.contains(j) { j += 1 }
            let a = i0 < i ? xl[i0].lowerBound..<xl[i - 1].upperBound : 0..<0
            let b = j0 < j ? yl[j0].lowerBound..<yl[j - 1].upperBound : 0..<0
            if !a.isEmpty, !b.isEmpty, let (g, d) = edits(Array(x[a]), Array(y[b]), limit: limit(a.count, b.count)) {
                gone += g.map { a.lowerBound + $0 }
                added += d.map { b.lowerBound + $0 }
            } else {
                gone += a
                added += b
            }
        }
        return (gone, added)
    }

    /// A shortest edit script from `x` to `y` (E. Myers, "An O(ND) difference algorithm", 1986):
    /// the positions of `x` it deletes and of `y` it inserts, every other word kept (a longest
    /// common subsequence); nil when it needs more than `limit` edits.
    static func edits(_ x: [Int32], _ y: [Int32], limit: Int) -> (gone: [Int], added: [Int])? {
        let n = x.count, m = y.count
        let limit = min(n + m, limit)
        if limit < n + m {
            // The words both hold, counted with repeats, bound any common subsequence: when even
            // they leave more edits than the limit, no walk is needed to know (a rewritten
            // paragraph shares "the" and "fire", not enough).
            var counts = [Int32](repeating: 0, count: Int(max(x.max() ?? 0, y.max() ?? 0)) + 1)
            for w in x { counts[Int(w)] += 1 }
            var common = 0
            for w in y where counts[Int(w)] > 0 {
                counts[Int(w)] -= 1
                common += 1
            }
            if n + m - 2 * common > limit { return nil }
        }
        let offset = limit + 1
        // v[offset + k]: the furthest x reached on diagonal k (x − y = k) with d edits.
        var v = [Int](repeating: 0, count: 2 * offset + 1)
        // Round d's diagonals −d…d as they were before it, at trace[d * d…]: to walk back the path.
        var trace: [Int] = []
        var found: Int?
        search: for d in 0...limit {
            trace.append(contentsOf: v[(offset - d)...(offset + d)])
            for k in stride(from: -d, through: d, by: 2) {
                var i = k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1
                var j = i - k
                while i < n, j < m, x[i] == y[j] { i += 1; j += 1 }
                v[offset + k] = i
                if i >= n, j >= m { found = d; break search }
            }
        }
        guard let edits = found else { return nil }
        var gone: [Int] = [], added: [Int] = []
        var i = n, j = m
        // Round by round back from the end; round 0 is the first snake, no edit.
        for d in stride(from: edits, to: 0, by: -1) {
            func at(_ k: Int) -> Int { trace[d * d + k + d] }
            let k = i - j
            let previous = k == -d || (k != d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1
            let pi = at(previous), pj = pi - previous
            // From (pi, pj) one edit, down (y[pj] inserted) or right (x[pi] deleted), then the
            // snake of kept words to (i, j).
            if previous == k + 1 { added.append(pj) } else { gone.append(pi) }
            i = pi; j = pj
        }
        return (gone, added)
    }

    /// `pairs` with each long unchanged run cut to its first and last `context` words around an
    /// ellipsis (the text's first run to its last words, its last run to its first): a word
    /// changed in a report of 900 words is shown with the words around it, not the report
    /// twice, as `diff` shows hunks with context lines.
    static func elided(_ pairs: [Pair], context: Int = 12) -> [Pair] {
        pairs.enumerated().map { i, pair in
            let bytes = Array(pair.plain.utf8)
            let words = bounds(bytes)
            let first = i == 0, last = i == pairs.count - 1 && pair.marked == nil
            // What the run keeps on each side: nothing before the text's first change, nothing
            // after its last; a side without a change keeps its start and end.
            let head = first && !last ? 0 : context, tail = last && !first ? 0 : context
            guard words.count > head + tail + 4 else { return pair }
            var kept = ""
            if head > 0 { kept += String(decoding: bytes[..<words[head - 1].upperBound], as: UTF8.self) }
            kept += head > 0 && tail > 0 ? "… " : head > 0 ? "…" : "… "
            if tail > 0 { kept += String(decoding: bytes[words[words.count - tail].lowerBound...], as: UTF8.self) }
            return Pair(plain: kept, marked: pair.marked)
        }
    }

    /// A side's words as pairs of runs: each run one slice of the text.
    static func pairs(_ text: [UInt8], _ words: [Range<Int>], _ kept: [Bool]) -> [Pair] {
        var out: [Pair] = []
        var i = 0
        func run(_ keep: Bool) -> String? {
            let start = i
            while i < words.count, kept[i] == keep { i += 1 }
            guard i > start else { return nil }
            return String(decoding: text[words[start].lowerBound..<words[i - 1].upperBound], as: UTF8.self)
        }
        while i < words.count {
            let plain = run(true) ?? ""
            out.append(Pair(plain: plain, marked: run(false)))
        }
        return out
    }
}
