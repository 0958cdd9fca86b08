/// Draws events: a table on wide terminals, two lines per event on narrow ones.
package struct EventLogRenderer: Sendable {
    package var options: RenderOptions
    package init(options: RenderOptions) { self.options = options }

    package func render(_ events: [EventViewData]) -> String {
        guard !events.isEmpty else { return "no events\n" }
        var lines: [String] = []
        if options.isNarrow {
            for e in events {
                let head = TextCell.fit("\(e.seq)  \(e.type)  \(e.stream)", options.width)
                lines.append(e.isFailure ? options.red(head) : options.bold(head))
                lines.append("    " + options.dim(TextCell.fit("\(e.time)  \(e.size)  \(e.summary)", options.width - 4)))
            }
        } else {
            let columns: [TableLayout.Column] = [
                .init(header: "SEQ", cells: events.map { String($0.seq) }, flexible: false),
                .init(header: "TIME", cells: events.map(\.time), flexible: false),
                .init(header: "TYPE", cells: events.map(\.type), flexible: true),
                .init(header: "STREAM", cells: events.map(\.stream), flexible: true, maximum: 20),
                .init(header: "SIZE", cells: events.map(\.size), flexible: false),
                .init(header: "HASH", cells: events.map(\.hash), flexible: true),
                .init(header: "DETAILS", cells: events.map(\.summary), flexible: true)
            ]
            let widths = TableLayout.widths(columns, total: options.width)
            lines.append(options.bold(TableLayout.line(columns.map(\.header), widths)))
            for (i, e) in events.enumerated() {
                let line = TableLayout.line(columns.map { $0.cells[i] }, widths)
                lines.append(e.isFailure ? options.red(line) : line)
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
