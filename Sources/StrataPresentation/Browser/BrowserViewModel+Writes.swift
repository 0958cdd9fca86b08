import Foundation
import StrataDomain
import StrataJSON

// Writes: create, edit, delete, the session and the outbox.
extension BrowserViewModel {
    /// The source's name when writes can be made now: live (the past is read-only), with the
    /// source taking `what` (else the status says which flag would make it do so).
    func writableSource(_ allowed: Bool, _ what: String, field: SourceSpec.Field) -> String? {
        guard deps.write != nil, let source = state.source, state.screen != .sources else { return nil }
        guard state.isLive else {
            update { $0.status = "the past is read-only: L returns to live, then \(what)" }
            return nil
        }
        guard allowed else {
            let status = deps.wording.sentence("\(source) takes no \(what)", .changeSource(source: source, field: field))
            update { $0.status = status }
            return nil
        }
        return source
    }

    /// The item the user means: the detail's, else the selected row's.
    var selectedID: String? { state.screen == .detail ? state.detailID : state.selectedRow?.item.id }

    func beginCreate() {
        guard writableSource(state.writes.create, "new items", field: .createURL) != nil else { return }
        update { $0.prompt = BrowserState.Prompt(kind: .create, text: "") }
    }

    func beginEdit() {
        guard writableSource(state.writes.edit, "edits", field: .updateURL) != nil, let id = selectedID else { return }
        let item = loaded.first { $0.id == id }
        let document = stagedDocuments[id] ?? item?.document ?? .object([:])
        let choices = Self.editChoices(document, source: sourceModel)
        update { $0.prompt = BrowserState.Prompt(kind: .edit(id: id), text: choices.first ?? "", choices: choices) }
    }

    /// `field=value` for every top-level field of `document` (nested ones as JSON): the title,
    /// subtitle and indexed fields first, then the rest by name.
    static func editChoices(_ document: JSONValue, source: Source?) -> [String] {
        guard case .object(let o) = document else { return [] }
        var paths: [String] = []
        if let title = source?.titlePath { paths.append(title) }
        paths += source?.subtitlePaths ?? []
        paths += source?.indexPaths ?? []
        paths += JSONValue.sortedKeys(o)
        var seen = Set<String>()
        var choices: [String] = []
        for path in paths where seen.insert(path).inserted {
            if let value = document.value(atPath: path) { choices.append("\(path)=\(ItemEdit.editable(value))") }
        }
        return choices
    }

    func create(_ text: String) {
        guard let source = state.source, let write = deps.write else { return }
        run(.write) { [weak self] _ in
            do {
                let doc = try ItemEdit.line(text).applied(to: .object([:]))
                let (_, id) = try await write.create(source: source, document: doc)
                self?.wrote("created \(id)", keep: id)
            } catch {
                self?.show(error, title: "Not created", hint: "Nothing was written. Enter closes this; n tries again.")
            }
        }
    }

    func edit(_ id: String, _ text: String) {
        guard let source = state.source, let write = deps.write else { return }
        let session = deps.session
        run(.write) { [weak self] _ in
            do {
                let (seq, changes) = try await write.edit(source: source, id: id, try ItemEdit.line(text), session: session)
                let what = changes.map { ChangeViewData(change: $0).text }.joined(separator: ", ")
                guard let self else { return }
                self.update { $0.status = seq == nil ? "no change to \(id): it already looks like that" : "staged \(id): \(what)" }
                self.loadWriteState()
            } catch {
                self?.show(error, title: "Not staged", hint: "Nothing was written. Enter closes this; e tries again.")
            }
        }
    }

    func beginDelete() {
        guard writableSource(state.writes.delete, "deletes", field: .deleteURL) != nil, let id = selectedID else { return }
        let title = loaded.first { $0.id == id }?.title ?? id
        update {
            $0.popup = BrowserState.Popup(
                title: "Delete \(id)?", message: title == id ? id : "\(id) · \(title)",
                hint: "y deletes it here at once (pending: P sends it); n keeps it.", question: .delete(ids: [id]))
        }
    }

    func answer(_ yes: Bool) {
        guard let question = state.popup?.question else { return }
        update { $0.popup = nil }
        guard yes, let source = state.source, let write = deps.write else { return }
        switch question {
        case .delete(let ids):
            run(.write) { [weak self] _ in
                do {
                    _ = try await write.delete(source: source, ids: ids)
                    self?.wrote("deleted \(ids.joined(separator: ", "))", keep: nil)
                } catch {
                    self?.show(error, title: "Not deleted", hint: "Nothing was written. Enter closes this.")
                }
            }
        }
    }

    func acceptSession() {
        guard let write = deps.write, state.staging != nil else { return }
        let session = deps.session
        run(.write) { [weak self] _ in
            do {
                let seqs = try await write.accept(session)
                self?.stagedDocuments = [:]
                self?.update { $0.staging = nil }
                self?.wrote("accepted \(seqs.count) patch\(seqs.count == 1 ? "" : "es")", keep: self?.selectedID)
            } catch {
                self?.show(error, title: "Not accepted", hint: "The edits stay staged. Enter closes this.")
            }
        }
    }

    func cancelSession() {
        guard let write = deps.write, state.staging != nil else { return }
        let session = deps.session
        run(.write) { [weak self] _ in
            do {
                let n = try await write.cancel(session)
                guard let self else { return }
                // The bar goes with the summary, in one state; the session read after confirms it.
                self.stagedDocuments = [:]
                self.update {
                    $0.staging = nil; $0.status = "cancelled: \(n) staged edit\(n == 1 ? "" : "s") discarded"
                }
                self.loadWriteState()
            } catch {
                self?.show(error, title: "Not cancelled", hint: "Enter closes this.")
            }
        }
    }

    /// After a write: the list and detail read again (the write shows at once, pending).
    func wrote(_ what: String, keep id: String?) {
        update { $0.status = "\(what) (pending; P sends it)" }
        loadList(keepID: id ?? state.selectedRow?.item.id)
        if state.screen == .detail || wide, let id = state.detailID { loadDetail(id: id, download: false) }
        loadWriteState()
    }

    func pushOutbox() {
        guard let push = deps.push, let source = state.source, !state.isPushing else { return }
        update {
            $0.isPushing = true; $0.refreshProgress = "sending the outbox of \(source)…"; $0.status = nil
        }
        run(.push) { [weak self] _ in
            do {
                let report = try await push([source]).first
                guard let self else { return }
                // The count comes with the summary: the bar never says "pushed" beside writes still to push.
                self.update {
                    $0.isPushing = false; $0.refreshProgress = nil; $0.status = report.map(Self.pushSummary) ?? "nothing to send"
                    if let report { $0.outbox = report.left }
                }
                if let report, let bad = report.outcomes.first(where: { $0.result == .conflicted || $0.result == .rejected }) {
                    self.update {
                        $0.popup = BrowserState.Popup(
                            title: bad.result == .conflicted ? "A write conflicts" : "A write was rejected",
                            message: "\(bad.kind.rawValue) \(bad.itemID): \(bad.message)",
                            hint: "It is kept. " + (self.deps.wording.next(.settleWrite(source: source, write: bad.write)).map { "\($0). " } ?? "")
                                + "Enter closes this.")
                    }
                }
            } catch {
                guard let self else { return }
                self.update {
                    $0.isPushing = false; $0.refreshProgress = nil; $0.status = "push failed; the writes stay pending"
                }
                self.show(error, title: "Push failed", hint: "Nothing was lost: the writes stay pending. Enter closes this; P tries again.")
            }
            self?.reloadAll()
        }
    }

    static func pushSummary(_ r: PushReport) -> String {
        if let offline = r.offline { return "offline (\(offline)): \(r.left) write\(r.left == 1 ? "" : "s") stay pending" }
        guard !r.outcomes.isEmpty else { return "nothing to send" }
        let counts = Dictionary(grouping: r.outcomes, by: \.result).mapValues(\.count)
        let parts = [PushReport.Outcome.Result.acknowledged, .conflicted, .rejected, .failed].compactMap { k in counts[k].map { "\($0) \(k.rawValue)" } }
        return "pushed: " + parts.joined(separator: ", ") + (r.left > 0 ? "; \(r.left) left" : "")
    }

    /// Reads the browser's session and the source's open writes (the staging bar, the title).
    func loadWriteState() {
        guard let write = deps.write, let source = state.source else { return }
        let push = deps.push, session = deps.session
        run(.writeState) { [weak self] isCurrent in
            let s = try? await write.session(session)
            let open = (try? await push?.outbox(source: source, all: false))?.count ?? 0
            guard isCurrent(), let self else { return }
            let items = s?.state == .open ? s!.items.filter { !$0.changes.isEmpty } : []
            self.stagedDocuments = Dictionary(items.filter { $0.source == source }.map { ($0.itemID, $0.result) }, uniquingKeysWith: { a, _ in a })
            self.update { st in
                st.outbox = open
                st.staging =
                    items.isEmpty
                    ? nil
                    : BrowserState.Staging(
                        session: session, changes: items.reduce(0) { $0 + $1.changes.count }, items: items.count,
                        byID: Dictionary(
                            items.filter { $0.source == source }.map { ($0.itemID, $0.changes.map(ChangeViewData.init(change:))) },
                            uniquingKeysWith: { a, _ in a }))
            }
        }
    }
}
