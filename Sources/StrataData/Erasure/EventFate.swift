public import EventStore

/// What erasure (`strata forget`) and retention made of an event's body: worked out here, once,
/// for every projection of Strata's data. No projection reads the markers itself: each is handed
/// the fate of the events it folds (``KeyedDocumentProjection/init(name:version:eventTypes:documentTypes:extraTables:skipping:fold:)``),
/// and never sees those whose fate it skips.
public enum EventFate: Sendable, Hashable {
    /// The body as it was stored.
    case kept
    /// A page a forget cut its item's entry from: the other items are still there.
    case cut
    /// A body a forget erased (a detail, an image, a write, a notification of the item).
    case erased
    /// A body a source's retention dropped.
    case dropped

    /// The fates in which the body no longer holds what was fetched.
    public static let gone: Set<EventFate> = [.erased, .dropped]
}

extension ProjectionContext {
    /// The event's fate: its body's rewrite (``EventStore/rewriteBodies(_:by:)``), and what it was
    /// rewritten to.
    public func fate(of event: RecordedEvent) throws -> EventFate {
        guard try payloadWasRewritten(event) else { return .kept }
        switch try payload(of: event) {
        case ItemErasure.erasedBody?: return .erased
        case SourceRetention.droppedBody?: return .dropped
        default: return .cut
        }
    }
}

extension KeyedDocumentProjection {
    /// A projection of Strata's data: `fold` is handed each event's ``EventFate`` and never sees
    /// an event whose fate is in `skipping` (folded as no operation).
    public init(
        name: String, version: Int, eventTypes: Set<String>? = nil, documentTypes: Set<String> = [], extraTables: [String] = [],
        keepsChangeOrder: Bool = false, skipping: Set<EventFate>,
        fold: @escaping @Sendable (RecordedEvent, EventFate, ProjectionContext) throws -> [DocumentOperation]?
    ) {
        self.init(
            name: name, version: version, eventTypes: eventTypes, documentTypes: documentTypes, extraTables: extraTables,
            keepsChangeOrder: keepsChangeOrder
        ) { event, ctx in
            let fate = try ctx.fate(of: event)
            return skipping.contains(fate) ? [] : try fold(event, fate, ctx)
        }
    }
}
