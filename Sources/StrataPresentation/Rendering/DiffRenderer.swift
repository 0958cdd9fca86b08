/// Draws what changed between two points: a summary line, then each item with its changes.
package struct DiffRenderer: Sendable {
    package var options: RenderOptions
    package init(options: RenderOptions) { self.options = options }

    package func render(_ d: DiffViewData) -> String {
        var lines = [options.bold(TextCell.fit("\(d.source.name): seq \(d.from) → \(d.to): \(d.summary)", options.width))]
        if d.items.isEmpty { lines.append("no differences") }
        for item in d.items {
            let head = TextCell.fit("\(item.mark) \(item.id)  \(item.title)", options.width)
            let styled =
                switch item.mark {
                case "+", "↺": options.green(head);
                case "-": options.red(head);
                default: options.yellow(head)
                }
            lines.append(styled)
            for c in item.changes {
                lines.append(options.changeLine(c))
            }
        }
        lines.append(options.staleness(d.source))
        return lines.joined(separator: "\n") + "\n"
    }
}
