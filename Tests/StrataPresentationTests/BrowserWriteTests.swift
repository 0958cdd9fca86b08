import Foundation
import StrataDomain
import StrataJSON
import StrataPresentation
import Testing

/// The browser's writes over in-memory repositories: `e` stages in the browser's session, the
/// staging bar accepts or cancels as one, `n` creates, `d` asks first, `P` pushes; the past and
/// read-only sources refuse with a status that says why.
@MainActor
@Suite struct BrowserWriteTests {
    /// The first published state that matches (the stream keeps the newest 16).
    static func first(in updates: AsyncStream<BrowserState>, where match: (BrowserState) -> Bool) async -> BrowserState? {
        for await s in updates where match(s) { return s }
        return nil
    }

    static func make(writable: Bool = true) -> (BrowserViewModel, MemoryWrites, MemoryRepositories) {
        let r = BrowserViewModelTests.repositories()
        if writable {
            r.source.createURL = "http://api.example/cars"
            r.source.updateURL = "http://api.example/cars/{id}"
            r.source.deleteURL = "http://api.example/cars/{id}"
        }
        let w = MemoryWrites(items: r)
        let vm = BrowserViewModel(
            dependencies: .init(
                query: QueryItems(items: r, sources: r), refresh: RefreshSource(remote: r, sources: r),
                loadDetail: LoadItemDetail(items: r, sources: r, remote: r), history: GetItemHistory(items: r, sources: r),
                replay: ReplayLog(log: r), sources: r, items: r, now: { Scene.t0 },
                write: WriteItems(writes: w, sources: r), push: PushOutbox(writes: w, push: w, sources: r), session: "browse",
                wording: Self.wording))
        return (vm, w, r)
    }

    /// The ways out as a front end would offer them, marked so the tests see which was offered.
    static let wording = FrontEndWording(
        inputs: .browser, field: \.rawValue,
        next: { step in
            switch step {
            case .setUser: "SET USER"
            case .settleWrite(let source, let write): "SETTLE \(source) \(write)"
            case .changeSource(let source, let field): "GIVE \(source ?? "any") \(field.rawValue)"
            default: nil
            }
        })

    static func open(_ vm: BrowserViewModel) async {
        vm.send(.start(source: "cars", asOf: nil))
        await vm.settle()
    }

    @Test func editsAreStagedThenAcceptedAsOneAndPushed() async throws {
        let (vm, w, _) = Self.make()
        await Self.open(vm)
        #expect(vm.state.writes == BrowserState.Writes(create: true, edit: true, delete: true))
        // The prompt starts on the title, then the subtitle and indexed fields, then the rest; Tab cycles.
        vm.send(.beginEdit)
        let prompt = try #require(vm.state.prompt)
        #expect(prompt.kind == .edit(id: "2") && prompt.text == "model=Yaris")
        #expect(prompt.choices == ["model=Yaris", "make=Toyota", "price=8750", "id=2"])
        vm.send(.nextChoice(1))
        #expect(vm.state.prompt?.text == "make=Toyota")
        vm.send(.nextChoice(-2))
        #expect(vm.state.prompt?.text == "id=2", "Shift-Tab wraps")
        vm.send(.editPrompt("price=8500"))
        vm.send(.submitPrompt)
        await vm.settle()
        #expect(w.patched.isEmpty, "a staged edit writes nothing to the items")
        #expect(vm.state.staging?.changes == 1 && vm.state.staging?.items == 1)
        #expect(vm.state.staging?.byID["2"]?.map(\.text) == ["~ /price: 8750 → 8500"])
        #expect(vm.state.status == "staged 2: ~ /price: 8750 → 8500")
        // `e` again starts from what is staged.
        vm.send(.beginEdit)
        #expect(vm.state.prompt?.choices.contains("price=8500") == true)
        vm.send(.cancelPrompt)
        // A second item: a set and a removal in one line.
        vm.send(.move(1))
        vm.send(.beginEdit)
        vm.send(.editPrompt("make=Toyota Motor; -price"))
        vm.send(.submitPrompt)
        await vm.settle()
        #expect(vm.state.staging?.changes == 3 && vm.state.staging?.items == 2)
        // Accepted: one patch per item, pending in the outbox; the bar leaves with the summary's frame.
        let accepting = vm.updates()
        vm.send(.acceptSession)
        await vm.settle()
        #expect(await Self.first(in: accepting) { $0.status?.hasPrefix("accepted") == true }?.staging == nil)
        #expect(w.patched.map(\.id) == ["2", "3"])
        #expect(w.patched.last?.changes.map(\.path).sorted() == ["/make", "/price"])
        #expect(vm.state.staging == nil && vm.state.outbox == 2)
        #expect(vm.state.status == "accepted 2 patches (pending; P sends it)")
        let updates = vm.updates()
        vm.send(.push)
        await vm.settle()
        #expect(w.pushes == 1 && vm.state.outbox == 0 && !vm.state.isPushing)
        #expect(vm.state.status == "pushed: 2 acknowledged")
        // The summary and the count arrive in one state: no frame says "pushed" beside "2 to push".
        #expect(await Self.first(in: updates) { $0.status?.hasPrefix("pushed") == true }?.outbox == 0)
    }

    @Test func aCancelledSessionLeavesTheItemsUntouched() async {
        let (vm, w, _) = Self.make()
        await Self.open(vm)
        vm.send(.beginEdit)
        vm.send(.editPrompt("price=1"))
        vm.send(.submitPrompt)
        await vm.settle()
        #expect(vm.state.staging != nil)
        let updates = vm.updates()
        vm.send(.cancelSession)
        await vm.settle()
        #expect(vm.state.staging == nil && w.patched.isEmpty && vm.state.outbox == 0)
        #expect(vm.state.status == "cancelled: 1 staged edit discarded")
        // The bar leaves with the summary's frame.
        #expect(await Self.first(in: updates) { $0.status?.hasPrefix("cancelled") == true }?.staging == nil)
    }

    @Test func createsAndDeletesThatAskFirst() async {
        let (vm, w, _) = Self.make()
        await Self.open(vm)
        vm.send(.beginCreate)
        #expect(vm.state.prompt?.kind == .create)
        vm.send(.editPrompt(#"model=Golf; make=Volkswagen; price=9000; note="a; b""#))
        vm.send(.submitPrompt)
        await vm.settle()
        #expect(
            w.created.first?.document == .object(["model": .string("Golf"), "make": .string("Volkswagen"), "price": .number("9000"), "note": .string("a; b")]))
        #expect(vm.state.status?.hasPrefix("created ") == true && vm.state.outbox == 1)
        // A line that is no edit: a pop-up, nothing written.
        vm.send(.beginCreate)
        vm.send(.editPrompt("just words"))
        vm.send(.submitPrompt)
        await vm.settle()
        #expect(vm.state.popup?.title == "Not created" && w.created.count == 1)
        vm.send(.dismissPopup)
        // `d` asks; n keeps the item, y deletes it.
        vm.send(.beginDelete)
        #expect(vm.state.popup?.question == .delete(ids: ["2"]) && vm.state.popup?.title == "Delete 2?")
        vm.send(.answer(false))
        await vm.settle()
        #expect(vm.state.popup == nil && w.deleted.isEmpty)
        vm.send(.beginDelete)
        vm.send(.answer(true))
        await vm.settle()
        #expect(w.deleted == ["2"] && vm.state.outbox == 2)
        #expect(vm.state.status == "deleted 2 (pending; P sends it)")
    }

    @Test func thePastReadOnlySourcesAndAMissingUserRefuseWithAReason() async {
        let (vm, w, r) = Self.make()
        await Self.open(vm)
        vm.send(.step(-1))
        await vm.settle()
        vm.send(.beginEdit)
        #expect(vm.state.prompt == nil && vm.state.status?.hasPrefix("the past is read-only") == true)
        vm.send(.live)
        await vm.settle()
        r.source.deleteURL = nil
        vm.send(.refresh)  // the source is read again on the next list read
        await vm.settle()
        vm.send(.beginDelete)
        #expect(vm.state.popup == nil && vm.state.status == "cars takes no deletes; GIVE cars deleteURL")
        w.user = nil
        vm.send(.beginCreate)
        vm.send(.editPrompt("model=Golf"))
        vm.send(.submitPrompt)
        await vm.settle()
        #expect(vm.state.popup?.message.contains("SET USER") == true && w.created.isEmpty)
    }

    @Test func aConflictOnPushRaisesAPopupAndKeepsTheWrite() async {
        let (vm, w, _) = Self.make()
        w.conflicting = "2"
        await Self.open(vm)
        vm.send(.beginEdit)
        vm.send(.editPrompt("price=8000"))
        vm.send(.submitPrompt)
        await vm.settle()
        vm.send(.acceptSession)
        await vm.settle()
        vm.send(.push)
        await vm.settle()
        #expect(vm.state.popup?.title == "A write conflicts")
        #expect(vm.state.popup?.message == "patch 2: /price changed on the server too")
        #expect(vm.state.popup?.hint.contains("SETTLE cars ") == true, "\(vm.state.popup?.hint ?? "")")
        #expect(vm.state.outbox == 1 && vm.state.status == "pushed: 1 conflicted; 1 left")
    }
}
