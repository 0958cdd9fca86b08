import Foundation
import StrataDomain
import StrataJSON

// The detail screen: an item as of the point, downloaded first when live.
extension BrowserViewModel {
    func open() {
        switch state.screen {
        case .sources:
            guard state.sources.indices.contains(state.sourceCursor) else { return }
            let name = state.sources[state.sourceCursor].source.name
            update { $0.source = name }
            openSource()
        case .list:
            guard let id = state.selectedRow?.item.id else { return }
            update {
                $0.screen = .detail; $0.detailScroll = 0; $0.showHistory = false
            }
            loadDetail(id: id, download: state.isLive)
        case .detail:
            break
        }
    }

    func back() {
        switch state.screen {
        case .detail:
            update {
                $0.screen = .list; $0.isDownloading = false
            }
            tasks[.detail]?.cancel()
        case .list where rootScreen == .sources:
            update { $0.screen = .sources }
            loadSources()
        default:
            break
        }
    }

    /// Reads an item's detail (downloading it first when asked), then its history up to the
    /// slider's point and the changes it had at that point.
    func loadDetail(id: String, download: Bool) {
        guard let source = state.source else { return }
        let deps = deps, point = pointInTime, pointSeq = state.point
        let online = download && (sourceModel?.hasDetails ?? true)
        update { s in
            s.detailID = id
            s.isDownloading = online
            if s.detail?.id != id { s.detail = nil; s.history = nil; s.changesAtPoint = [] }
        }
        run(.detail) { [weak self] isCurrent in
            do {
                let r = try await deps.loadDetail(source: source, id: id, at: point, offline: !online)
                var data = ItemDetailViewData(source: r.source, item: r.item, asOf: pointSeq, refreshError: r.refreshError?.message)
                if let pointSeq { data.asOf = "seq \(pointSeq)" }
                data.thumbnail = await thumbnail(for: r.item, settings: deps.detailThumbnails, items: deps.items)
                let history = try? await deps.history(source: source, id: id, upTo: point)
                guard isCurrent(), let self else { return }
                self.update { s in
                    s.detail = data
                    s.isDownloading = false
                    s.history = history.map { HistoryViewData(source: r.source, id: id, versions: $0.versions) }
                    if let pointSeq, let last = history?.versions.last, last.seq == pointSeq {
                        s.changesAtPoint = last.changes.map(ChangeViewData.init(change:))
                    } else {
                        s.changesAtPoint = []
                    }
                    if let e = r.refreshError, online {
                        s.popup = BrowserState.Popup(
                            title: "Download failed", message: e.message,
                            hint: "The stored detail is shown. Enter closes this; r on the list refreshes.")
                    }
                }
            } catch let e as RepositoryError where e.code == .notFound && pointSeq != nil {
                // Not there yet at the slider's point: an empty pane, no pop-up.
                guard isCurrent(), let self else { return }
                self.update { s in
                    s.isDownloading = false; s.detail = nil; s.history = nil; s.changesAtPoint = []
                    s.status = "\(id) did not exist at seq \(pointSeq!)"
                }
            } catch {
                guard isCurrent(), let self else { return }
                self.update {
                    $0.isDownloading = false; $0.changesAtPoint = []
                }
                self.show(error, title: "Could not open \(id)")
            }
        }
    }
}
