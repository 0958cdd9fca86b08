/// The state of content that loads asynchronously. Failures keep what was shown before.
package enum Loadable<Value: Sendable & Equatable>: Sendable, Equatable {
    case idle
    case loading(previous: Value?)
    case loaded(Value)
    case failed(PresentableError, previous: Value?)

    /// The value to show: the loaded one, or the previous one while loading or after a failure.
    package var value: Value? {
        switch self {
        case .idle: nil
        case .loading(let v): v
        case .loaded(let v): v
        case .failed(_, let v): v
        }
    }

    package var isLoading: Bool { if case .loading = self { true } else { false } }

    package var error: PresentableError? { if case .failed(let e, _) = self { e } else { nil } }
}

/// Observable state for a view model: the current value plus an `AsyncStream` of every change.
/// Lives on the main actor with its view model.
@MainActor
final class StateStore<State: Sendable> {
    private(set) var value: State
    private var continuations: [Int: AsyncStream<State>.Continuation] = [:]
    private var nextID = 0

    init(_ initial: State) { value = initial }

    func set(_ new: State) {
        value = new
        for c in continuations.values { c.yield(new) }
    }

    /// Every state from now on, starting with the current one.
    func updates() -> AsyncStream<State> {
        let id = nextID
        nextID += 1
        let (stream, continuation) = AsyncStream<State>.makeStream(bufferingPolicy: .bufferingNewest(16))
        continuation.yield(value)
        continuations[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { @MainActor in self?.continuations[id] = nil } }
        return stream
    }

    /// Ends every stream (the view model is done).
    func finish() {
        for c in continuations.values { c.finish() }
        continuations = [:]
    }
}

/// Draws stored images as terminal thumbnails (a presentation port; the app plugs in chafa).
package protocol ImageRenderer: Sendable {
    /// The image in `columns` × `rows` cells, one string per row, or nil if it cannot be drawn.
    func render(_ bytes: [UInt8], columns: Int, rows: Int) -> [String]?
}

/// Thumbnail size and drawer for list and detail views.
package struct ThumbnailSettings: Sendable {
    package var renderer: any ImageRenderer
    package var columns: Int
    package var rows: Int
    package init(renderer: any ImageRenderer, columns: Int = 8, rows: Int = 4) {
        self.renderer = renderer; self.columns = columns; self.rows = rows
    }
}

/// Loads an item's stored image and draws it; nil when there is none or it cannot be drawn.
func thumbnail(for item: Item, settings: ThumbnailSettings?, items: any ItemRepository) async -> [String]? {
    guard let settings, let image = item.image, let bytes = try? await items.imageData(image) else { return nil }
    return settings.renderer.render(bytes, columns: settings.columns, rows: settings.rows)
}

import StrataDomain
