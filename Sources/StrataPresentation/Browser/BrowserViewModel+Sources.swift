import Foundation
import StrataDomain
import StrataJSON

// The sources screen.
extension BrowserViewModel {
    func loadSources() {
        let deps = deps
        run(.sources) { [weak self] isCurrent in
            do {
                let sources = try await deps.sources.sources()
                var rows: [BrowserState.SourceRow] = []
                for s in sources {
                    let total = try await deps.query(ItemQuery(source: s.name, limit: 1)).page.total
                    rows.append(Self.sourceRow(s, items: total, now: deps.now()))
                }
                let head = try await deps.replay.resolve(.now)
                guard isCurrent(), let self else { return }
                self.update { st in
                    st.sources = rows
                    st.sourceCursor = min(st.sourceCursor, max(0, rows.count - 1))
                    if st.head == 0 { st.head = head }
                }
                if self.pausedHead == 0 { self.pausedHead = head }
            } catch {
                self?.show(error, title: "Could not read the sources")
            }
        }
    }

    static func sourceRow(_ s: Source, items: Int, now: Date) -> BrowserState.SourceRow {
        let data = SourceViewData(source: s)
        let last: String, failed: Bool
        switch data.freshness {
        case .never: last = "never fetched"; failed = false
        case .fetched(let at, _): last = "fetched \(at)"; failed = false
        case .failed(let at, let error, _): last = "failed \(at): \(error)"; failed = true
        }
        let age = s.lastSuccess.map { AgeText.format(now.timeIntervalSince($0.at)) } ?? "-"
        return BrowserState.SourceRow(source: data, items: items, lastFetch: last, failed: failed, age: age)
    }
}
