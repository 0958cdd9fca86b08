public import EventStore
import Foundation

/// What `strata forget` did.
public struct ForgetSummary: Sendable, Equatable {
    public var source: String
    /// The `ItemForgotten` event's seq.
    public var seq: UInt64
    public var items: Int
    /// List bodies the items were cut out of.
    public var bodiesRewritten: Int
    /// Details and images erased whole.
    public var bodiesErased: Int
}

/// A forgotten item, as reads of it answer.
public struct ForgottenItem: Sendable, Equatable {
    public var seq: UInt64
    public var reason: String
    public var recordedAt: Timestamp
}

/// Erasure of items (`strata forget`): their entries are cut out of every stored list body of
/// their source, their details and images replaced by ``erasedBody``, and the log keeps an
/// `ItemForgotten` event saying who, when, why and which bodies (by digest) — never what.
///
/// The event is appended first; the bodies are rewritten after it
/// (``EventStore/rewriteBodies(_:by:)``), in one transaction, and every projection is folded
/// again from the log as it now reads, so the items leave no row behind. A process killed
/// between the two leaves an erasure recorded but not applied: ``applyPending()`` (run when a
/// store is opened for writing, and after a pull from a team log) finishes it, on this node or
/// on any other that receives the event.
public struct ItemErasure: Sendable {
    public static let erasedBody = Array(#"{"strata.erased":true}"#.utf8)

    /// Whether `body` is an erased one (what a fold finds in place of an erased payload).

    let store: EventStore

    public init(store: EventStore) { self.store = store }

    /// Forgets `keys` of `source`.
    /// - Throws: ``FetchError`` (`source`) when no key names a stored item or version.
    public func forget(_ source: SourceDefinition, keys: [String], reason: String, by actor: String) async throws -> ForgetSummary {
        let wanted = Set(keys)
        let plan = try await rewrites(source, keys: wanted)
        guard !plan.rewrites.isEmpty else {
            throw FetchError(
                code: .source,
                message: "\(source.name) has no stored version of \(keys.joined(separator: ", "))",
                url: source.url)
        }
        var payload: [String: JSONValue] = [
            "source": .string(source.name), "reason": .string(reason), "by": .string(actor),
            "items": .array(keys.sorted().map { .string(Self.itemDigest(source: source.name, key: $0)) }),
            "rewrites": EventStore.rewriteRecord(plan.rewrites)
        ]
        payload["erased"] = .number(String(plan.erased))
        let event = NewEvent(
            type: DataEvents.itemForgotten, stream: source.name,
            metadata: [("source", source.name), ("items", String(keys.count)), ("by", actor), ("rewrites", String(plan.rewrites.count))],
            payload: JSONValue.object(payload).canonicalBytes)
        let seq = try await store.append(event).seq
        try await store.rewriteBodies(plan.rewrites, by: seq)
        return ForgetSummary(source: source.name, seq: seq, items: keys.count, bodiesRewritten: plan.rewrites.count - plan.erased, bodiesErased: plan.erased)
    }

    /// Applies every recorded erasure whose bodies are not rewritten yet (a forget killed between
    /// its event and its rewrite, an event pulled from a team log); returns how many.
    /// - Throws: ``FetchError`` when this store's bodies do not give the digests the event names.
    @discardableResult
    public func applyPending() async throws -> Int {
        let events = try await store.events(EventQuery(type: DataEvents.itemForgotten))
        guard !events.isEmpty else { return 0 }
        var applied = 0
        for e in events {
            guard let body = try await store.payload(of: e), let source = e[metadata: "source"] else { continue }
            let doc = try JSONValue(parsing: body)
            guard let pairs = RewritePair.listed(in: body), case .array(let digests)? = doc.value(atPath: "items") else { continue }
            var listed: [[UInt8]: [UInt8]] = [:]
            for pair in pairs {
                // A body this store never held as it was (pulled from a team log in its erased
                // form, with the erasure's row) has nothing left to rewrite.
                guard try await store.rewrittenBy(pair.original) != e.seq, try await !store.storedBodies([pair.original]).isEmpty else { continue }
                listed[pair.original] = pair.now
            }
            guard !listed.isEmpty else { continue }
            // The event names its items by digest only: they are found again among the
            // ids this store holds for the source (its items and details, removed ones too).
            let wanted = Set(digests.compactMap { if case .string(let d) = $0 { d } else { nil } })
            let candidates = try await store.read { [store] txn in
                var keys = Set<String>()
                for name in ["items", "details"] {
                    let reader = DocumentReader(transaction: txn, tables: try store.tables(of: name))
                    for (k, _) in try reader.summaries(collection: source) { keys.insert(k) }
                }
                return keys
            }
            let keys = Set(candidates.filter { wanted.contains(Self.itemDigest(source: source, key: $0)) })
            let definition = try await SourceCatalog(store: store).get(source) ?? SourceDefinition(name: source, url: "")
            let plan = try await rewrites(definition, keys: keys).rewrites.filter { listed[$0.original] != nil }
            guard plan.count == listed.count, plan.allSatisfy({ listed[$0.original] == $0.rewritten }) else {
                throw EventStoreError(
                    code: .corrupted, message: "the erasure at seq \(e.seq) (\(source)) names bodies this store cannot rewrite to the same digests")
            }
            try await store.rewriteBodies(plan, by: e.seq)
            applied += 1
        }
        return applied
    }

    /// The items `key` names in its forgetting event, if it was forgotten.
    public func forgotten(source: String, key: String) async throws -> ForgottenItem? {
        let events = try await store.events(EventQuery(stream: source, type: DataEvents.itemForgotten))
        guard !events.isEmpty else { return nil }
        let digest = Self.itemDigest(source: source, key: key)
        for e in events.reversed() {
            guard let body = try await store.payload(of: e) else { continue }
            let doc = try JSONValue(parsing: body)
            guard case .array(let items)? = doc.value(atPath: "items"), items.contains(.string(digest)) else { continue }
            let reason: String = if case .string(let r)? = doc.value(atPath: "reason") { r } else { "" }
            return ForgottenItem(seq: e.seq, reason: reason, recordedAt: e.recordedAt)
        }
        return nil
    }

    /// An item named in the log without spelling its id: 24 hex digits of SHA-256("strata-forget"
    /// NUL source NUL id). Not keyed: every node of a team log must find the same items from it
    /// (a store's redaction key is its own); an id that can be guessed can be tested against it,
    /// as it can against the envelopes of the item's detail requests, whose URLs name it.
    static func itemDigest(source: String, key: String) -> String {
        Hashing.sha256(Array("strata-forget\u{0}\(source)\u{0}\(key)".utf8)).prefix(12).map { String(format: "%02x", $0) }.joined()
    }

    /// Events of a source's stream whose payload carries an item's content, found by the item's
    /// key in their metadata: its local writes and the server's answers to them.
    static let writeTypes: Set<String> = WriteEvents.writes.union([
        WriteEvents.staged, WriteEvents.acknowledged, WriteEvents.rejected, WriteEvents.conflicted, WriteEvents.retried
    ])

    /// The rewrites that take `keys` out of `source`'s stored bodies: list bodies without their
    /// entries; details, images, local writes (and the answers to them) and alert notifications
    /// about the items replaced whole; each body once, however many events carry it.
    func rewrites(_ source: SourceDefinition, keys: Set<String>) async throws -> (rewrites: [BodyRewrite], erased: Int) {
        let head = try await store.head().seq
        var seen = Set<[UInt8]>()
        var out: [BodyRewrite] = []
        var erased = 0
        func erase(_ e: RecordedEvent) async throws {
            guard let ref = e.payload, !seen.contains(ref.hash), try await store.rewrittenBy(ref.hash) == nil else { return }
            seen.insert(ref.hash)
            out.append(BodyRewrite(original: ref.hash, content: Self.erasedBody))
            erased += 1
        }
        // An item created here had a local id until the server named it: its writes under the
        // local id are the item's too.
        var written = keys
        for e in try await store.events(EventQuery(stream: source.name, type: WriteEvents.acknowledged)) {
            if let id = e[metadata: "serverId"], keys.contains(id), let local = e[metadata: "key"] { written.insert(local) }
        }
        var from: UInt64 = 1
        while from <= head {
            let chunk = try await store.events(EventQuery(stream: source.name, fromSeq: from, toSeq: head, limit: 512))
            guard let last = chunk.last else { break }
            for e in chunk {
                guard let ref = e.payload, !seen.contains(ref.hash) else { continue }
                switch e.type {
                case DataEvents.pageFetched, DataEvents.pageNotModified, DataEvents.readAheadDiscarded:
                    guard let body = try await store.payload(of: e) else { continue }
                    let extraction = e[metadata: "items"] != nil ? ItemExtraction(metadataOf: e) : ItemExtraction(source)
                    guard let cut = extraction.removing(keys, from: body) else { continue }
                    seen.insert(ref.hash)
                    out.append(BodyRewrite(original: ref.hash, content: cut))
                case DataEvents.detailFetched, DataEvents.detailNotModified, DataEvents.imageFetched:
                    guard let key = e[metadata: "key"], keys.contains(key) else { continue }
                    try await erase(e)
                case let type where Self.writeTypes.contains(type):
                    guard let key = e[metadata: "key"], written.contains(key) else { continue }
                    try await erase(e)
                default:
                    continue
                }
            }
            from = last.seq + 1
        }
        // Notifications live on their alerts' streams; their body is what changed in the item.
        for e in try await store.events(EventQuery(type: AlertEvents.queued)) where e[metadata: "source"] == source.name {
            if let item = e[metadata: "item"], written.contains(item) { try await erase(e) }
        }
        return (out, erased)
    }
}

extension ItemExtraction {
    /// `body` without the items whose ids are in `keys` (re-serialized as canonical JSON), or nil
    /// when it holds none of them or is not a list this extraction reads.
    func removing(_ keys: Set<String>, from body: [UInt8]) -> [UInt8]? {
        guard let (document, items) = try? self.items(in: body, url: ""), items.contains(where: { keys.contains($0.key) }) else { return nil }
        let container: JSONValue
        switch itemsPath.flatMap({ document.value(atPath: $0) }) ?? document {
        case .array:
            container = .array(items.filter { !keys.contains($0.key) }.map(\.item))
        case .object(var map):
            for k in keys { map.removeValue(forKey: k) }
            container = .object(map)
        default:
            return nil
        }
        guard let itemsPath else { return container.canonicalBytes }
        return Self.setting(container, at: itemsPath.split(separator: ".").map(String.init)[...], in: document).canonicalBytes
    }

    private static func setting(_ value: JSONValue, at path: ArraySlice<String>, in doc: JSONValue) -> JSONValue {
        guard let first = path.first, case .object(var o) = doc else { return value }
        o[first] = setting(value, at: path.dropFirst(), in: o[first] ?? .null)
        return .object(o)
    }
}
