package import StrataPresentation
package import TerminalUI

/// Renders the browser's state into a cell buffer: a pure function of the state, the size and
/// the options, so every screen is a golden test. Holds no logic beyond layout.
package struct BrowserView: Sendable {
    package struct Options: Sendable, Hashable {
        /// ASCII borders, markers and spinner.
        package var ascii: Bool
        /// Cells per list-row thumbnail (columns × rows); nil: no thumbnails.
        package var thumbnail: (columns: Int, rows: Int)?
        /// The spinner's frame (the app advances it only while work runs).
        package var spinnerFrame: Int

        package init(ascii: Bool = false, thumbnail: (columns: Int, rows: Int)? = nil, spinnerFrame: Int = 0) {
            self.ascii = ascii; self.thumbnail = thumbnail; self.spinnerFrame = spinnerFrame
        }
        package static func == (a: Options, b: Options) -> Bool {
            a.ascii == b.ascii && a.thumbnail?.columns == b.thumbnail?.columns && a.thumbnail?.rows == b.thumbnail?.rows && a.spinnerFrame == b.spinnerFrame
        }
        package func hash(into h: inout Hasher) { h.combine(ascii); h.combine(thumbnail?.columns); h.combine(spinnerFrame) }
    }

    package var options: Options
    package init(options: Options = Options()) { self.options = options }

    /// Columns from which the detail shows beside the list (landscape).
    package static let wideColumns = 100

    /// The layout of a size: where the list (or other content) goes, and the detail pane.
    package struct Layout: Sendable, Equatable {
        package var content: Rect
        package var side: Rect?
        /// Rows of list entries the content shows.
        package var listRows: Int
    }

    package func layout(_ size: Size, state: BrowserState) -> Layout {
        let area = Rect(width: size.columns, height: size.rows)
        let onSource = state.source != nil && state.screen != .sources
        let body = area.splitTop(1).rest.splitBottom(onSource ? (state.staging != nil ? 3 : 2) : 1).rest
        var content = body, side: Rect?
        if size.columns >= Self.wideColumns, state.screen != .sources {
            let split = body.splitLeft(body.width * 11 / 20)
            content = split.left
            side = split.rest
        }
        let rowHeight = rowHeight(state)
        return Layout(content: content, side: side, listRows: max(1, (content.height - 1) / rowHeight))
    }

    func rowHeight(_ state: BrowserState) -> Int {
        state.hasImages && options.thumbnail != nil ? max(1, options.thumbnail!.rows) : 1
    }

    package func render(_ state: BrowserState, size: Size) -> CellBuffer {
        var b = CellBuffer(size: size)
        guard size.columns >= 10, size.rows >= 4 else {
            b.write("too small", x: 0, y: 0)
            return b
        }
        let layout = layout(size, state: state)
        titleBar(&b, state, Rect(width: size.columns, height: 1))
        switch state.screen {
        case .sources:
            sources(&b, state, layout.content)
        case .list:
            list(&b, state, layout.content)
            if let side = layout.side { detailPane(&b, state, side, border: true) }
        case .detail:
            if let side = layout.side {
                list(&b, state, layout.content)
                detailPane(&b, state, side, border: true)
            } else {
                detailPane(&b, state, layout.content, border: false)
            }
        }
        if state.source != nil, state.screen != .sources {
            timeline(&b, state, Rect(x: 0, y: size.rows - 2, width: size.columns, height: 1))
            if let staging = state.staging { stagingBar(&b, staging, Rect(x: 0, y: size.rows - 3, width: size.columns, height: 1)) }
        }
        statusLine(&b, state, Rect(x: 0, y: size.rows - 1, width: size.columns, height: 1))
        if state.showHelp { help(&b, state, b.area) }
        if let popup = state.popup { self.popup(&b, popup, b.area) }
        return b
    }

    // MARK: Bars

    private var marker: String { options.ascii ? ">" : "▶" }
    private var removedMark: String { options.ascii ? "x" : "✗" }
    private var changedMark: String { options.ascii ? "*" : "●" }
    /// A row with local writes not yet confirmed by the server (`!` when one conflicts).
    private func pendingMark(_ state: String) -> String { state == "conflict" ? "!" : options.ascii ? "~" : "↑" }
    /// A row with edits staged in the browser's session.
    private var stagedMark: String { options.ascii ? "e" : "✎" }

    /// "✎ 3 changes in 2 items staged (session browse): [a]ccept [c]ancel".
    private func stagingBar(_ b: inout CellBuffer, _ st: BrowserState.Staging, _ r: Rect) {
        b.fill(r, role: .highlight)
        let what =
            "\(stagedMark) \(st.changes) change\(st.changes == 1 ? "" : "s") in \(st.items) item\(st.items == 1 ? "" : "s") staged (session \(st.session)): "
        b.write(segments: [(what, .highlight), ("[a]", .key), ("ccept ", .highlight), ("[c]", .key), ("ancel", .highlight)], x: r.x, y: r.y, width: r.width)
    }

    private func titleBar(_ b: inout CellBuffer, _ s: BrowserState, _ r: Rect) {
        var text = "Strata"
        if let source = s.source, s.screen != .sources {
            text += " · \(source) · \(s.total) item\(s.total == 1 ? "" : "s")"
            if !s.filterText.isEmpty { text += " · /\(s.filterText)" + (s.usedIndex ? " (index)" : "") }
            if let sort = s.filter.sort { text += " · sort \(sort)" }
            if s.outbox > 0 { text += " · \(s.outbox) to push (P)" }
        } else {
            text += " · \(s.sources.count) source\(s.sources.count == 1 ? "" : "s")"
        }
        b.writeLine(text, in: r, role: .title)
        let when =
            s.point.map { "as of seq \($0)" + (s.newEvents > 0 ? " · \(s.newEvents) new event\(s.newEvents == 1 ? "" : "s")" : "") } ?? "live · seq \(s.head)"
        let w = TextWidth.of(when)
        if w + 2 < r.width - TextWidth.of(text) {
            b.write(when, x: r.maxX - w - 1, y: r.y, role: s.point == nil ? .title : .highlight)
        }
    }

    private func statusLine(_ b: inout CellBuffer, _ s: BrowserState, _ r: Rect) {
        b.fill(r, role: .status)
        if let prompt = s.prompt {
            let label =
                switch prompt.kind {
                case .filter: "/"
                case .point: "as of (seq or date): "
                case .create: "new (field=value; …): "
                case .edit(let id): "edit \(id): "
                }
            let hint = prompt.choices.count > 1 ? "  Tab: next field · Enter stages · Esc" : ""
            b.write(segments: [(label, .status), (prompt.text + "▏", .status), (hint, .status)], x: r.x, y: r.y, width: r.width)
            return
        }
        var x = r.x
        if s.isBusy {
            let frames = options.ascii ? ["|", "/", "-", "\\"] : ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
            x += b.write(frames[options.spinnerFrame % frames.count] + " ", x: x, y: r.y, role: .status)
            let what = s.refreshProgress ?? (s.isDownloading ? "downloading the detail…" : "loading…")
            x += b.write(what + "  ", x: x, y: r.y, width: r.maxX - x, role: .status)
        } else if let status = s.status {
            x += b.write(status + "  ", x: x, y: r.y, width: r.maxX - x, role: .status)
        }
        let hints = "? help  q " + (s.screen == .sources || s.source == nil ? "quit" : "back")
        let w = TextWidth.of(hints)
        if x + w < r.maxX { b.write(hints, x: r.maxX - w, y: r.y, role: .status) }
    }

    /// The slider: one column per stretch of the source's events; failures marked, the point
    /// shown, the future dim.
    private func timeline(_ b: inout CellBuffer, _ s: BrowserState, _ r: Rect) {
        let marks = s.timeline
        let label = marks.isEmpty ? "no events" : "seq \(s.pointSeq) "
        let used = b.write(label, x: r.x, y: r.y, role: s.point == nil ? .dim : .highlight)
        let bar = Rect(x: r.x + used, y: r.y, width: r.width - used, height: 1)
        guard !marks.isEmpty, bar.width > 2 else { return }
        let n = marks.count
        let pointIndex = marks.lastIndex { $0.seq <= s.pointSeq } ?? 0
        let pointColumn = n == 1 ? 0 : pointIndex * (bar.width - 1) / (n - 1)
        for col in 0..<bar.width {
            let from = n <= bar.width ? (bar.width == 1 ? 0 : col * (n - 1) / max(1, bar.width - 1)) : col * n / bar.width
            let to = n <= bar.width ? from : max(from, (col + 1) * n / bar.width - 1)
            let slice = marks[min(from, n - 1)...min(to, n - 1)]
            let exact = n <= bar.width ? (0..<n).contains { $0 * (bar.width - 1) / max(1, n - 1) == col } : true
            var glyph = exact ? (options.ascii ? "|" : "│") : (options.ascii ? "-" : "─")
            var role: StyleRole = col > pointColumn ? .future : .accent
            if exact, slice.contains(where: \.isFailure) { glyph = options.ascii ? "x" : "✗"; role = col > pointColumn ? .future : .error }
            if col == pointColumn { glyph = options.ascii ? "#" : "◆"; role = s.point == nil ? .accent : .highlight }
            b.write(glyph, x: bar.x + col, y: bar.y, role: role)
        }
    }

    // MARK: Sources

    private func sources(_ b: inout CellBuffer, _ s: BrowserState, _ r: Rect) {
        guard !s.sources.isEmpty else {
            b.write(
                s.noSourcesText, x: r.x + 1, y: r.y + 1,
                width: r.width - 2, role: .dim)
            return
        }
        let nameW = min(24, max(6, s.sources.map { TextWidth.of($0.source.name) }.max() ?? 6)), countW = 8, ageW = 6
        b.write(
            segments: [
                ("  " + TextWidth.fit("SOURCE", to: nameW) + " ", .heading), (TextWidth.fit("ITEMS", to: countW) + " ", .heading),
                (TextWidth.fit("AGE", to: ageW) + " ", .heading), ("LAST FETCH", .heading)
            ], x: r.x, y: r.y, width: r.width)
        for (i, row) in s.sources.enumerated() where i + 1 < r.height {
            let y = r.y + 1 + i
            let selected = i == s.sourceCursor
            let base: StyleRole = selected ? .selection : .normal
            if selected { b.fill(Rect(x: r.x, y: y, width: r.width, height: 1), role: .selection) }
            b.write(
                segments: [
                    ((selected ? marker : " ") + " ", base), (TextWidth.fit(row.source.name, to: nameW) + " ", selected ? base : .strong),
                    (TextWidth.fit(String(row.items), to: countW) + " ", base), (TextWidth.fit(row.age, to: ageW) + " ", base),
                    (row.lastFetch, selected ? base : row.failed ? .error : .dim)
                ], x: r.x, y: y, width: r.width)
        }
    }

    // MARK: List

    private func list(_ b: inout CellBuffer, _ s: BrowserState, _ r: Rect) {
        guard r.height > 1 else { return }
        let thumb = s.hasImages ? options.thumbnail : nil
        let rowHeight = rowHeight(s)
        let thumbW = thumb.map { $0.columns + 1 } ?? 0
        let idW = min(10, max(2, s.rows.map { TextWidth.of($0.item.id) }.max() ?? 2))
        let fieldW = s.columns.isEmpty ? 0 : min(14, max(6, (r.width - 2 - idW - thumbW) / (s.columns.count + 3)))
        let fieldsW = s.columns.count * (fieldW + 1)
        // The position counter (`12/240+`) sits at the header's right end: the title column gives
        // up its room, so the counter never covers a column's name.
        let visibleRows = (r.height - 1) / rowHeight
        let counter = s.rows.count > visibleRows ? "\(s.cursor + 1)/\(s.total)" + (s.hasMore ? "+" : "") : nil
        let counterW = counter.map { TextWidth.of($0) + 1 } ?? 0
        let titleW = max(6, r.width - 2 - idW - 1 - thumbW - fieldsW - counterW)
        var header: [(String, StyleRole)] = [
            ("  " + String(repeating: " ", count: thumbW) + TextWidth.fit("ID", to: idW) + " ", .heading),
            (TextWidth.fit("TITLE", to: titleW), .heading)
        ]
        for c in s.columns { header.append((" " + TextWidth.fit(c.uppercased(), to: fieldW), .heading)) }
        b.write(segments: header, x: r.x, y: r.y, width: r.width)
        if s.rows.isEmpty {
            let text = s.isLoading ? "loading…" : s.filterText.isEmpty ? "No items stored yet: press r to fetch." : "No item matches /\(s.filterText)."
            b.write(text, x: r.x + 2, y: r.y + 2, width: r.width - 2, role: .dim)
            return
        }
        let visible = visibleRows
        for i in 0..<visible {
            let index = s.top + i
            guard s.rows.indices.contains(index) else { break }
            let row = s.rows[index]
            let y = r.y + 1 + i * rowHeight
            let selected = index == s.cursor
            let changed = s.point != nil && row.changedSeq == s.point
            let role: StyleRole = selected ? .selection : row.item.isRemoved ? .removed : changed ? .highlight : .normal
            if selected || changed { b.fill(Rect(x: r.x, y: y, width: r.width, height: rowHeight), role: role) }
            let staged = s.staging?.byID[row.item.id] != nil
            let mark =
                selected ? marker : row.item.isRemoved ? removedMark : row.item.pending.map(pendingMark) ?? (staged ? stagedMark : changed ? changedMark : " ")
            var x = r.x + b.write(mark + " ", x: r.x, y: y, role: selected ? .selection : row.item.isRemoved ? .removed : changed ? .highlight : .normal)
            if let thumb {
                if let t = row.item.thumbnail {
                    b.blit(t.prefix(thumb.rows).map { ANSIText.cells($0) }, x: x, y: y, width: thumb.columns)
                } else {
                    b.write(options.ascii ? "[img]" : "▒▒▒▒", x: x, y: y, width: thumb.columns, role: .dim)
                }
                x += thumbW
            }
            x += b.write(TextWidth.fit(row.item.id, to: idW) + " ", x: x, y: y, role: selected || changed ? role : row.item.isRemoved ? .removed : .dim)
            b.write(TextWidth.fit(row.item.title, to: titleW), x: x, y: y, role: row.item.isRemoved && !selected ? .removed : role == .normal ? .strong : role)
            x += titleW
            for (j, v) in row.item.fields.prefix(s.columns.count).enumerated() {
                b.write(" " + TextWidth.fit(v, to: fieldW), x: x + j * (fieldW + 1), y: y, role: role)
            }
            if rowHeight > 1, !row.item.subtitle.isEmpty {
                b.write(row.item.subtitle, x: r.x + 2 + thumbW + idW + 1, y: y + 1, width: r.width - (2 + thumbW + idW + 1), role: selected ? role : .dim)
            } else if rowHeight == 1, !row.item.subtitle.isEmpty, fieldsW == 0 {
                let t = TextWidth.of(row.item.title) + 2
                if t < titleW { b.write(row.item.subtitle, x: r.x + 2 + idW + 1 + t, y: y, width: titleW - t, role: selected ? role : .dim) }
            }
        }
        if let counter {
            b.write(counter, x: r.maxX - TextWidth.of(counter) - 1, y: r.y, role: .dim)
        }
    }

    // MARK: Detail

    private func detailPane(_ b: inout CellBuffer, _ s: BrowserState, _ r: Rect, border: Bool) {
        var area = r
        if border {
            for y in r.y..<r.maxY { b.write(options.ascii ? "|" : "│", x: r.x, y: y, role: .border) }
            area = Rect(x: r.x + 2, y: r.y, width: r.width - 2, height: r.height)
        }
        guard let d = s.detail else {
            let text = s.isDownloading ? "downloading the detail…" : s.detailID == nil ? "" : "loading…"
            b.write(text, x: area.x + 1, y: area.y + 1, width: area.width - 1, role: .dim)
            return
        }
        var lines: [[(String, StyleRole)]] = []
        lines.append([(d.title, d.isRemoved ? .removed : .heading)] + (d.isRemoved ? [("  (removed)", .removed)] : []))
        if !d.subtitle.isEmpty { lines.append([(d.subtitle, .normal)]) }
        lines.append([(d.status + (d.asOf.map { " · as of \($0)" } ?? ""), .dim)])
        if let e = d.refreshError { lines.append([("download failed: \(e)", .warning)]) }
        lines.append([])
        let thumbRows = s.showHistory || options.thumbnail == nil ? [] : (d.thumbnail ?? [])
        if s.showHistory {
            lines.append([("History of \(d.id) (h: fields)", .heading)])
            for v in (s.history?.versions ?? []).reversed() {
                let atPoint = s.point == v.seq
                lines.append([("v\(v.version) ", atPoint ? .highlight : .strong), ("\(v.kind) seq \(v.seq) \(v.time)", atPoint ? .highlight : .dim)])
                for c in v.changes { lines.append(change(c)) }
            }
        } else {
            let changed = Dictionary(s.changesAtPoint.map { (Self.dotted($0.path), $0) }, uniquingKeysWith: { a, _ in a })
            if !s.changesAtPoint.isEmpty {
                lines.append([("Changed at seq \(s.pointSeq):", .heading)]); for c in s.changesAtPoint { lines.append(change(c)) }; lines.append([])
            }
            if let staged = s.staging?.byID[d.id], !staged.isEmpty {
                lines.append([("Staged (a accepts, c cancels):", .heading)])
                for c in staged { lines.append(change(c)) }
                lines.append([])
            }
            let labelW = min(22, d.fields.map { TextWidth.of($0.label) }.max() ?? 8)
            for f in d.fields {
                let hit = changed[f.label] != nil
                lines.append([(TextWidth.fit(f.label, to: labelW) + "  ", hit ? .changed : .dim), (f.value, hit ? .changed : .normal)])
            }
            lines.append([])
            lines.append([
                ("h history · [ ] step · { } changes of this item" + (s.writes.edit ? " · e edit" : "") + (s.writes.delete ? " · d delete" : ""), .dim)
            ])
        }
        // A larger thumbnail at the top right, when there is room.
        var textWidth = area.width
        if !thumbRows.isEmpty {
            let tw = thumbRows.map { ANSIText.cells($0).count }.max() ?? 0
            if area.width - tw > 30 {
                b.blit(thumbRows.map { ANSIText.cells($0) }, x: area.maxX - tw, y: area.y, width: tw)
                textWidth = area.width - tw - 1
            }
        }
        let maxScroll = max(0, lines.count - area.height)
        let scroll = min(s.detailScroll, maxScroll)
        for (i, line) in lines.dropFirst(scroll).prefix(area.height).enumerated() {
            let width = i + scroll < thumbRows.count ? textWidth : area.width
            b.write(segments: line, x: area.x, y: area.y + i, width: width)
        }
    }

    private func change(_ c: ChangeViewData) -> [(String, StyleRole)] {
        switch c.mark {
        case .added: [("  + \(c.path): ", .added), (c.new ?? "", .added)]
        case .removed: [("  - \(c.path): ", .removed), (c.old ?? "", .removed)]
        case .replaced: [("  ~ \(c.path): ", .changed), (c.old ?? "", .removed), (options.ascii ? " -> " : " → ", .dim), (c.new ?? "", .added)]
        }
    }

    /// `/price` → `price`, `/a/0/b` → `a.0.b`: a change's path as the detail labels it.
    static func dotted(_ pointer: String) -> String {
        pointer.split(separator: "/").joined(separator: ".")
    }

    // MARK: Overlays

    private func popup(_ b: inout CellBuffer, _ p: BrowserState.Popup, _ area: Rect) {
        let width = min(64, area.width - 4)
        let message = Self.wrap(p.message, width: width - 4)
        let hint = Self.wrap(p.hint, width: width - 4)
        let box = area.centered(width: width, height: message.count + hint.count + 4)
        b.fill(box, role: .normal)
        let role: StyleRole = p.question == nil ? .error : .warning
        b.box(box, title: p.title, ascii: options.ascii, role: role, titleRole: role)
        for (i, line) in message.enumerated() { b.write(line, x: box.x + 2, y: box.y + 1 + i, width: width - 4, role: .strong) }
        for (i, line) in hint.enumerated() { b.write(line, x: box.x + 2, y: box.y + 2 + message.count + i, width: width - 4, role: .dim) }
    }

    private func help(_ b: inout CellBuffer, _ s: BrowserState, _ area: Rect) {
        let keys = Self.helpKeys(s.screen)
        let width = min(58, area.width - 2)
        let box = area.centered(width: width, height: keys.count + 2)
        b.fill(box, role: .normal)
        let title =
            switch s.screen {
            case .sources: "Keys: sources";
            case .list: "Keys: list";
            case .detail: "Keys: detail"
            }
        b.box(box, title: title, ascii: options.ascii)
        for (i, (key, what)) in keys.enumerated() where i < box.height - 2 {
            b.write(segments: [(TextWidth.fit(key, to: 12), .key), (what, .normal)], x: box.x + 2, y: box.y + 1 + i, width: width - 4)
        }
    }

    /// The keys of one screen, for `?`.
    package static func helpKeys(_ screen: BrowserState.Screen) -> [(String, String)] {
        let move = [("↑ ↓  j k", "move"), ("PgUp PgDn", "a page"), ("g G", "first, last")]
        let writes = [
            ("n", "new item (field=value; …)"), ("e", "edit a field (Tab: next); staged"), ("d", "delete (asks first)"),
            ("a c", "accept, cancel the staged edits"), ("P", "push the outbox to the API")
        ]
        let slider = [
            ("[ ]", "one event back, forward"), ("{ }", "previous, next change of this item"), ("t", "go to a seq or date"),
            ("L", "back to live")
        ]
        switch screen {
        case .sources:
            return move + [("Enter", "open the source's list"), ("r", "refresh the selected source"), ("q Q", "quit"), ("?", "close help")]
        case .list:
            return move + [
                ("Enter", "open the item (downloads its detail)"), ("/", "filter: make=Toyota, or text"), ("s", "sort"),
                ("r", "refresh from the API"), ("Esc q", "back"), ("Q", "quit from any screen")
            ] + writes + slider + [("?", "close help")]
        case .detail:
            return [("↑ ↓  j k", "scroll"), ("h", "history: versions, old → new"), ("Esc q", "back to the list"), ("Q", "quit from any screen")]
                + writes + slider + [("?", "close help")]
        }
    }

    /// Words of `text` in lines of at most `width` columns.
    static func wrap(_ text: String, width: Int) -> [String] {
        guard width > 0 else { return [] }
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            let w = String(word)
            if line.isEmpty { line = w } else if TextWidth.of(line) + 1 + TextWidth.of(w) <= width { line += " " + w } else { lines.append(line); line = w }
            while TextWidth.of(line) > width { lines.append(TextWidth.truncate(line, to: width)); line = "" }
        }
        if !line.isEmpty { lines.append(line) }
        return lines.isEmpty ? [""] : lines
    }
}
