import Foundation
import StrataDomain
import StrataJSON

// Prompts: search, filter, go-to point, sort.
extension BrowserViewModel {
    func submitPrompt() {
        guard let prompt = state.prompt else { return }
        update { $0.prompt = nil }
        switch prompt.kind {
        case .filter:
            let text = prompt.text.trimmingCharacters(in: .whitespaces)
            update { s in
                s.filterText = text
                s.filter.wheres = text.contains("=") ? [text] : []
                s.filter.search = text.contains("=") || text.isEmpty ? nil : text
                s.cursor = 0; s.top = 0
            }
            loadList(keepID: nil)
        case .point:
            setPoint(text: prompt.text.trimmingCharacters(in: .whitespaces))
        case .create:
            create(prompt.text)
        case .edit(let id):
            edit(id, prompt.text)
        }
    }

    func cycleSort() {
        let options: [String?] = [nil] + state.columns.flatMap { [$0, "-" + $0] }
        sortChoice = (sortChoice + 1) % options.count
        let sort = options[sortChoice]
        update {
            $0.filter.sort = sort; $0.status = sort.map { "sorted by \($0)" } ?? "sorted by id"; $0.cursor = 0; $0.top = 0
        }
        loadList(keepID: nil)
    }
}
