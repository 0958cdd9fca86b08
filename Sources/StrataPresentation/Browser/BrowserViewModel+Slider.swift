import Foundation
import StrataDomain
import StrataJSON

// The slider: the point in the log the screens are read at.
extension BrowserViewModel {
    func loadTimeline(_ source: String) {
        let deps = deps
        run(.timeline) { [weak self] isCurrent in
            guard let entries = try? await deps.replay(LogQuery(stream: source, limit: 1_000_000, newestFirst: false)), isCurrent(), let self else { return }
            self.update { s in
                s.timeline = entries.map { BrowserState.Mark(seq: $0.seq, type: $0.type, isFailure: $0.isFailure, time: TimeText.format($0.recordedAt)) }
            }
        }
    }

    func setPoint(text: String) {
        guard !text.isEmpty else { return }
        let deps = deps
        run(.point) { [weak self] _ in
            do {
                let parsed = try PointInTime.parse(text, option: "the point", quoting: FilterInputNames.browser.quoting)
                let seq = try await deps.replay.resolve(parsed)
                self?.move(to: seq)
            } catch {
                self?.show(error, title: "Not a point of the log", hint: "Type a seq (42) or a date (2026-03-01 or 2026-03-01T09:00:00Z).")
            }
        }
    }

    func step(_ delta: Int) {
        let current = state.pointSeq
        let marks = state.timeline
        guard !marks.isEmpty else { return }
        if delta < 0 {
            guard let previous = marks.last(where: { $0.seq < current }) else {
                update { $0.status = "at the first event of \($0.source ?? "the source")" }
                return
            }
            move(to: previous.seq)
        } else {
            guard state.point != nil else { return }
            if let next = marks.first(where: { $0.seq > current }) {
                move(to: next.seq)
            } else {
                send(.live)
            }
        }
    }

    func jumpToChange(forward: Bool) {
        guard let source = state.source, let id = state.screen == .detail ? state.detailID : state.selectedRow?.item.id else { return }
        let deps = deps, current = state.pointSeq
        run(.point) { [weak self] _ in
            guard let versions = try? await deps.history(source: source, id: id, upTo: .now).versions, let self else { return }
            let target = forward ? versions.first { $0.seq > current } : versions.last { $0.seq < current }
            if let target {
                self.move(to: target.seq)
            } else {
                self.update { $0.status = forward ? "no later change of \(id)" : "no earlier change of \(id)" }
            }
        }
    }

    /// Puts the slider at `seq` and reads every screen as of it.
    func move(to seq: UInt64) {
        if state.point == nil { pausedHead = state.head }
        update { s in
            s.point = seq
            s.newEvents = Int(s.head > pausedHead ? s.head - pausedHead : 0)
            let mark = s.timeline.first { $0.seq == seq }
            s.status = "as of seq \(seq)" + (mark.map { " · \($0.type) · \($0.time)" } ?? "")
        }
        reloadAll()
    }

    /// Reads the current screen again (the slider moved, a refresh ended, the head moved).
    /// `keepingDetailLoad`: a detail that is loading already is left to finish (it reads the
    /// store after its download, which is usually what moved the head), so its outcome — a
    /// failed download's pop-up among it — is not dropped.
    func reloadAll(keepingDetailLoad: Bool = false) {
        switch state.screen {
        case .sources:
            loadSources()
        case .list, .detail:
            loadList(keepID: state.selectedRow?.item.id)
            loadWriteState()
            let detailLoading = keepingDetailLoad && tasks[.detail] != nil
            if state.screen == .detail || wide, let id = state.detailID, !detailLoading { loadDetail(id: id, download: false) }
            if state.screen == .detail, state.detailID == nil { update { $0.screen = .list } }
        }
    }

    func headMoved(_ head: UInt64) {
        guard head != state.head else { return }
        update { s in
            s.head = head
            if s.point != nil { s.newEvents = Int(head > pausedHead ? head - pausedHead : 0) }
        }
        if let source = state.source { loadTimeline(source) }
        if state.isLive { reloadAll(keepingDetailLoad: true) }
    }
}
