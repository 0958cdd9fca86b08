import Foundation
import StrataApp
import StrataBrowser
import StrataJSON
import StrataPresentation
import TerminalUI

/// `strata-lab bench browse`: the browser's speed on a source of N items (fetched by
/// ``StoreBenchmark``), through the app's composition root and the real view model, view and frame encoder (no terminal: frames are
/// encoded, not written). First frame, keypress to encoded frame while scrolling and while
/// stepping the slider, and the bytes each frame takes against the cells it changed.
enum BrowseBenchmark {
    @MainActor
    static func measure(app: StrataApp, steps: Int, size: Size) async throws -> [String: JSONValue] {
        let view = BrowserView()
        let encoder = FrameEncoder(theme: .dark)
        let clock = ContinuousClock()
        var previous: CellBuffer?
        var frameBytes: [Int] = []
        var changedCells: [Int] = []
        func frame(_ vm: BrowserViewModel) -> Int {
            let next = view.render(vm.state, size: size)
            let bytes = encoder.encode(previous: previous, next: next).count
            if let previous { changedCells.append(zip(previous.cells, next.cells).count { $0 != $1 }) }
            previous = next
            return bytes
        }
        // First frame: the view model made, the list opened, its first page read and drawn.
        let start = clock.now
        let vm = app.viewModels.browser(listThumbnail: (columns: 4, rows: 2), detailThumbnail: (columns: 24, rows: 12))
        vm.send(.start(source: "bench", asOf: nil))
        vm.send(.viewport(rows: view.layout(size, state: vm.state).listRows, wide: false))
        await vm.settle()
        let firstBytes = frame(vm)
        let first = clock.now - start
        guard vm.state.rows.count > 0 else { throw BenchmarkError("the browse benchmark read no rows") }

        func latencies(_ command: BrowserViewModel.Command, count: Int) async -> [Int] {
            var out: [Int] = []
            for _ in 0..<count {
                let t = clock.now
                vm.send(command)
                await vm.settle()
                frameBytes.append(frame(vm))
                let d = clock.now - t
                out.append(Int(d.components.attoseconds / 1_000_000_000_000) + Int(d.components.seconds) * 1_000_000)
            }
            return out
        }
        // The slider at the top of the list first (the common case), then everything again deep in it.
        let sliderTop = await latencies(.step(-1), count: min(steps, max(1, vm.state.timeline.count - 1)))
        vm.send(.live)
        await vm.settle()
        _ = frame(vm)
        frameBytes = []; changedCells = []
        let scroll = await latencies(.move(1), count: steps)
        let scrollBytes = frameBytes, scrollCells = changedCells
        frameBytes = []; changedCells = []
        let page = await latencies(.move(max(1, vm.state.viewportRows - 1)), count: max(1, steps / 10))
        frameBytes = []; changedCells = []
        let slider = await latencies(.step(-1), count: min(steps, max(1, vm.state.timeline.count - 1)))
        let sliderBytes = frameBytes
        func p(_ v: [Int], _ q: Double) -> Int { v.isEmpty ? 0 : v.sorted()[min(v.count - 1, Int(Double(v.count) * q))] }
        let meanBytes = scrollBytes.isEmpty ? 0 : Double(scrollBytes.reduce(0, +)) / Double(scrollBytes.count)
        let meanCells = scrollCells.isEmpty ? 0 : Double(scrollCells.reduce(0, +)) / Double(scrollCells.count)
        return [
            "firstFrameMicros": .int(Int(first.components.attoseconds / 1_000_000_000_000) + Int(first.components.seconds) * 1_000_000),
            "firstFrameBytes": .int(firstBytes),
            "scrollSteps": .int(scroll.count),
            "scrollP50Micros": .int(p(scroll, 0.5)), "scrollP99Micros": .int(p(scroll, 0.99)),
            "pageP50Micros": .int(p(page, 0.5)), "pageP99Micros": .int(p(page, 0.99)),
            "sliderSteps": .int(slider.count),
            "sliderTopP50Micros": .int(p(sliderTop, 0.5)), "sliderTopP99Micros": .int(p(sliderTop, 0.99)),
            "cursorRowDuringDeepSlider": .int(vm.state.cursor + 1),
            "sliderP50Micros": .int(p(slider, 0.5)), "sliderP99Micros": .int(p(slider, 0.99)),
            "scrollBytesPerFrame": .double((meanBytes * 10).rounded() / 10),
            "scrollChangedCellsPerFrame": .double((meanCells * 10).rounded() / 10),
            "scrollBytesPerChangedCell": .double(meanCells == 0 ? 0 : (meanBytes / meanCells * 100).rounded() / 100),
            "sliderBytesPerFrame": .int(sliderBytes.isEmpty ? 0 : sliderBytes.reduce(0, +) / sliderBytes.count),
            "loadedRowsAfterScroll": .int(vm.state.rows.count)
        ]
    }
}
