package import StrataDomain
package import StrataJSON

// The JSON shapes of the store tools' nouns (docs/cli.md): a verification, the statistics, a
// quarantined event, keyed documents with their versions and diffs, an alert with its counts.

extension StoreVerification {
    /// `verify --format json`; `ok` as the command judged it (a strict verify fails on quarantine).
    package func json(ok: Bool) -> JSONValue {
        JSONValue.object([
            "ok": .bool(ok), "headSeq": .int(headSeq), "eventsChecked": .int(eventsChecked),
            "blobsChecked": .int(bodiesChecked), "problemCount": .int(problemCount),
            "problems": .array(problems.map { .string($0) }),
            "projections": .array(
                projections.map {
                    .object([
                        "name": .string($0.name), "checkpoint": .int($0.checkpoint), "matchesRebuild": .bool($0.matchesRebuild),
                        "digest": .string($0.digest),
                        "differences": .array($0.differences.map { .string($0) })
                    ])
                }),
            "quarantined": .array(quarantined.map(\.json)),
            "rewrites": .array(
                rewrites.map {
                    .object(["seq": .int($0.seq), "eventType": .string($0.eventType), "bodies": .int($0.bodies), "summary": .string($0.summary)])
                })
        ])
    }
}

extension QuarantinedEntry {
    package var json: JSONValue { .object(["projection": .string(projection), "seq": .int(seq), "reason": .string(reason)]) }
}

extension StoreStatistics {
    package var json: JSONValue {
        .object([
            "path": .string(path), "events": .int(events), "headSeq": .int(headSeq), "headHash": .string(headHash),
            "logBytes": .int(logBytes), "indexBytes": .int(indexBytes), "blobs": .int(bodies),
            "blobRawBytes": .int(bodyRawBytes), "blobStoredBytes": .int(bodyStoredBytes),
            "payloadBytes": .int(payloadBytes), "payloadCount": .int(payloadCount),
            "dedupeRatio": .double(dedupeRatio), "compressionRatio": .double(compressionRatio),
            "mapSize": .int(mapSize), "usedBytes": .int(usedBytes), "fileBytes": .int(fileBytes), "freeBytes": .int(freeBytes),
            "staleReadersCleared": .int(staleReadersCleared),
            "retention": .array(
                retention.map { .object(["source": .string($0.source), "horizon": .int($0.horizon), "bodies": .int($0.bodies), "bytes": .int($0.bytes)]) }),
            "projections": .array(
                projections.map { p in
                    .object([
                        "name": .string(p.name), "version": .int(p.version), "checkpoint": .int(p.checkpoint),
                        "lag": .int(p.lag), "quarantined": .int(p.quarantined),
                        "tables": .array(p.tables.map { .object(["name": .string($0.name), "entries": .int($0.entries), "bytes": .int($0.bytes)]) })
                    ])
                })
        ])
    }
}

extension KeyedDocumentDiff {
    package var json: JSONValue {
        .object([
            "key": .string(key), "kind": .string(kind.rawValue), "before": before ?? .null, "after": after ?? .null,
            "changes": .array(changes.map(\.json))
        ])
    }
}

extension KeyedDocument {
    package var json: JSONValue {
        var o: [String: JSONValue] = [
            "collection": .string(collection), "key": .string(key), "version": .int(version),
            "firstSeq": .int(firstSeq), "changedSeq": .int(changedSeq), "removed": .bool(removed), "document": document
        ]
        if let lastSeenSeq { o["lastSeenSeq"] = .int(lastSeenSeq) }
        return .object(o)
    }
}

extension KeyedDocumentVersion {
    package var json: JSONValue {
        .object([
            "collection": .string(collection), "key": .string(key), "version": .int(version), "seq": .int(seq),
            "recordedAt": .string(recordedAt.iso8601), "kind": .string(kind.rawValue), "document": document,
            "changes": .array(changes.map(\.json))
        ])
    }
}

extension AlertSummary {
    package var json: JSONValue {
        guard case .object(var o) = alert.definition else { return .null }
        o["source"] = .string(alert.source)
        o["name"] = .string(alert.name)
        o["addedSeq"] = .number(String(addedSeq))
        o["pending"] = .number(String(pending))
        o["delivered"] = .number(String(delivered))
        o["failed"] = .number(String(failed))
        return .object(o)
    }
}

extension ForgetResult {
    /// `forget --format json`.
    package var json: JSONValue {
        .object([
            "source": .string(source), "seq": .int(seq), "items": .int(UInt64(items)),
            "bodiesRewritten": .int(UInt64(bodiesRewritten)), "bodiesErased": .int(UInt64(bodiesErased))
        ])
    }
}

extension AppendResult {
    /// `record --format json`.
    package var json: JSONValue { .object(["seq": .int(seq), "id": .string(id), "appended": .bool(appended)]) }
}

extension JSONValue {
    /// A local create as `create --format json` gives it: pending until pushed.
    package init(created id: String, seq: UInt64) { self = .object(["seq": .number(String(seq)), "id": .string(id), "pending": .bool(true)]) }

    /// A local edit as `edit --format json` gives it: its seq (null when it changed nothing),
    /// whether it was staged in a session, and its changes.
    package init(edit seq: UInt64?, staged: Bool, changes: [Change]) {
        self = .object([
            "seq": seq.map { .number(String($0)) } ?? .null, "staged": .bool(staged), "changes": .array(changes.map(JSONValue.init(change:)))
        ])
    }
}

extension Compaction {
    /// `compact --format json`: the store's size before and after, and what retention dropped.
    package var json: JSONValue {
        .object([
            "path": .string(path), "events": .int(Int(events)), "bytesBefore": .int(bytesBefore), "bytesAfter": .int(bytesAfter),
            "retention": .array(
                retention.map {
                    .object([
                        "source": .string($0.source), "seq": .int($0.seq), "horizon": .int($0.horizon), "bodies": .int($0.bodies), "bytes": .int($0.bytes)
                    ])
                })
        ])
    }
}
