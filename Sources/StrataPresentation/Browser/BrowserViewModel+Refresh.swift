import Foundation
import StrataDomain
import StrataJSON

// Refreshing the source from the API.
extension BrowserViewModel {
    func refresh() {
        guard let source = state.source ?? (state.sources.indices.contains(state.sourceCursor) ? state.sources[state.sourceCursor].source.name : nil),
            !state.isRefreshing
        else { return }
        let deps = deps, images = sourceModel?.imagePath != nil
        update {
            $0.isRefreshing = true; $0.refreshProgress = "fetching \(source)…"; $0.status = nil
        }
        run(.refresh) { [weak self] _ in
            do {
                let r = try await deps.refresh(source, details: false, images: images)
                guard let self else { return }
                var message = "fetched \(r.pages) page\(r.pages == 1 ? "" : "s"): \(r.added) added, \(r.changed) changed, \(r.removed) removed"
                if !r.failures.isEmpty { message += "; \(r.failures.count) request\(r.failures.count == 1 ? "" : "s") failed" }
                self.update {
                    $0.isRefreshing = false; $0.refreshProgress = nil; $0.status = message
                }
                if !r.failures.isEmpty {
                    self.update {
                        $0.popup = BrowserState.Popup(
                            title: "Some requests failed", message: r.failures.first ?? "",
                            hint: "Everything else was stored. Enter closes this; r tries again.")
                    }
                }
            } catch {
                guard let self else { return }
                self.update {
                    $0.isRefreshing = false; $0.refreshProgress = nil; $0.status = "refresh failed; showing stored data"
                }
                self.show(error, title: "Refresh failed", hint: "The stored data is still shown. Enter closes this; r tries again.")
            }
            self?.reloadAll()
        }
    }
}
