// The browser's state changes that need nothing but the state: pure, so the view model's
// `send` names them and tests can check them without a use case.
extension BrowserState {
    /// Opens on a source's list.
    mutating func openList(of source: String) {
        screen = .list
        self.source = source
    }

    /// Opens a prompt; the filter's starts from the filter in force.
    mutating func beginPrompt(_ kind: Prompt.Kind) {
        prompt = Prompt(kind: kind, text: kind == .filter ? filterText : "")
    }

    /// Leaves the slider's point: the screens read the head again.
    mutating func goLive() {
        point = nil
        newEvents = 0
        status = "live"
    }

    /// Shows or hides the detail's history, from its top.
    mutating func toggleHistory() {
        showHistory.toggle()
        detailScroll = 0
    }

    mutating func scrollDetail(by delta: Int) {
        detailScroll = max(0, detailScroll + delta)
    }

    /// The prompt's next (or previous) prefilled choice, wrapping around.
    mutating func nextChoice(_ delta: Int) {
        guard var p = prompt, !p.choices.isEmpty else { return }
        p.choice = ((p.choice + delta) % p.choices.count + p.choices.count) % p.choices.count
        p.text = p.choices[p.choice]
        prompt = p
    }
}
