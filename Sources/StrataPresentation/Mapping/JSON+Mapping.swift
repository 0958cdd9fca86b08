package import Foundation
#if canImport(Glibc)
    import Glibc
#endif
package import StrataDomain
package import StrataJSON

/// The machine-readable shapes of `--format json|ndjson` (documented in docs/cli.md). Keys are
/// stable; times are ISO 8601 UTC; seqs are numbers.
extension JSONValue {
    /// A list row or an item: id, title, fields, image, version and the stored documents.
    package init(item i: Item) {
        var fields: [String: JSONValue] = [:]
        for f in i.fields { fields[f.path] = .string(f.value) }
        self = .object([
            "source": .string(i.source), "id": .string(i.id), "title": .string(i.title),
            "subtitle": .array(i.subtitle.map { .string($0) }), "fields": .object(fields),
            "imageURL": i.imageURL.map { .string($0) } ?? .null,
            "image": i.image.map {
                .object([
                    "url": .string($0.url), "sha256": .string($0.sha256), "size": .number(String($0.size)),
                    "contentType": .string($0.contentType)
                ])
            } ?? .null,
            "version": .number(String(i.version)), "firstSeq": .number(String(i.firstSeq)), "changedSeq": .number(String(i.changedSeq)),
            "removed": .bool(i.isRemoved), "document": i.document, "detail": i.detail ?? .null,
            "pending": .bool(i.pending != .none), "conflicted": .bool(i.pending == .conflicted)
        ])
    }

    package init(push r: PushReport) {
        self = .object([
            "source": .string(r.source), "acknowledged": .number(String(r.count(.acknowledged))), "rejected": .number(String(r.count(.rejected))),
            "conflicted": .number(String(r.count(.conflicted))), "failed": .number(String(r.count(.failed))),
            "left": .number(String(r.left)), "offline": r.offline.map(JSONValue.string) ?? .null,
            "seconds": .number(String(format: "%.3f", r.seconds)),
            "outcomes": .array(
                r.outcomes.map { o in
                    .object([
                        "write": .number(String(o.write)), "kind": .string(o.kind.rawValue), "item": .string(o.itemID),
                        "result": .string(o.result.rawValue), "status": o.status.map { .number(String($0)) } ?? .null,
                        "message": .string(o.message), "rebased": .number(String(o.rebased))
                    ])
                })
        ])
    }

    package init(session s: EditSession) {
        self = .object([
            "session": .string(s.name), "state": .string(s.state.rawValue),
            "items": .array(
                s.items.map { i in
                    .object([
                        "source": .string(i.source), "id": .string(i.itemID), "edits": .number(String(i.edits)),
                        "patch": .array(i.changes.map { PatchOperation($0).json })
                    ])
                })
        ])
    }

    package init(write w: LocalWrite) {
        var o: [String: JSONValue] = [
            "seq": .number(String(w.seq)), "id": .string(w.id), "kind": .string(w.kind.rawValue), "source": .string(w.source),
            "item": .string(w.itemID), "user": .string(w.user), "state": .string(w.state.rawValue), "attempts": .number(String(w.attempts)),
            "changes": .array(w.changes.map(JSONValue.init(change:))), "rebased": .number(String(w.rebased))
        ]
        if let s = w.serverID { o["serverId"] = .string(s) }
        if let s = w.session { o["session"] = .string(s) }
        if let d = w.document { o["document"] = d }
        if let s = w.status { o["status"] = .number(String(s)) }
        if let r = w.reason { o["reason"] = .string(r) }
        if w.state == .conflicted {
            o["conflict"] = .object([
                "server": w.serverDocument ?? .null, "paths": .array(w.conflictPaths.map(JSONValue.string)),
                "local": w.localDocument ?? .null
            ])
        }
        self = .object(o)
    }

    package init(change c: Change) {
        var o: [String: JSONValue] = ["kind": .string(c.kind.rawValue), "path": .string(c.path)]
        if let old = c.old { o["old"] = old }
        if let new = c.new { o["new"] = new }
        self = .object(o)
    }

    package init(version v: ItemVersion) {
        var o: [String: JSONValue] = [
            "version": .number(String(v.version)), "seq": .number(String(v.seq)), "recordedAt": .string(ISOTime.format(v.recordedAt)),
            "kind": .string(v.kind.rawValue), "run": v.run.map { .string($0) } ?? .null, "eventType": v.eventType.map { .string($0) } ?? .null,
            "changes": .array(v.changes.map(JSONValue.init(change:))), "document": v.document,
            "origin": .string(v.origin.rawValue), "backfilled": .bool(v.backfilled)
        ]
        if let why = v.restored { o["restored"] = .string(why) }
        // A local version: who wrote it and what the server said.
        if let l = v.local {
            o["local"] = .object([
                "user": .string(l.user), "write": .number(String(l.seq)), "kind": .string(l.kind.rawValue),
                "state": .string(l.state.rawValue), "status": l.status.map { .number(String($0)) } ?? .null,
                "reason": l.reason.map(JSONValue.string) ?? .null
            ])
        }
        self = .object(o)
    }

    package init(diff d: ItemDiff) {
        self = .object([
            "id": .string(d.id), "title": .string(d.title), "kind": .string(d.kind.rawValue),
            "changes": .array(d.changes.map(JSONValue.init(change:)))
        ])
    }

    /// A collection diff as `diff --format json` prints it.
    package init(collectionDiff diff: CollectionDiff) {
        self = .object([
            "source": .string(diff.source), "fromSeq": .number(String(diff.fromSeq)), "toSeq": .number(String(diff.toSeq)),
            "items": .array(diff.items.map(JSONValue.init(diff:)))
        ])
    }

    package init(source s: Source) {
        func run(_ r: FetchRun?) -> JSONValue {
            guard let r else { return .null }
            var o: [String: JSONValue] = [
                "run": .string(r.id), "seq": .number(String(r.seq)), "at": .string(ISOTime.format(r.at)),
                "succeeded": .bool(r.succeeded), "pages": .number(String(r.pages)), "failures": .number(String(r.failures))
            ]
            switch r.outcome {
            case .completed(let complete): o["complete"] = .bool(complete)
            case .failed(let message): o["error"] = .string(message)
            }
            return .object(o)
        }
        self = .object(["name": .string(s.name), "url": .string(s.url), "lastRun": run(s.lastRun), "lastSuccess": run(s.lastSuccess)])
    }

    /// An event as `export --events --format ndjson` writes it (and `serve`'s `/_strata/log`).
    /// The one JSON shape of an event (docs/cli.md, "Event"): `log --format json`, the lines of
    /// `export --events`, `/_strata/log` and the server's event stream. `payload` is null for an
    /// event without a body; `body`, when given, goes in it (JSON as it is, else `base64`).
    package init(entry e: LogEntry, body: [UInt8]? = nil) {
        var payload: JSONValue = .null
        if let sha = e.payloadSHA256 {
            var p: [String: JSONValue] = ["sha256": .string(sha), "size": .number(String(e.payloadSize ?? 0))]
            if let body {
                if let json = try? JSONValue(parsing: body) { p["body"] = json } else { p["base64"] = .string(Data(body).base64EncodedString()) }
            }
            payload = .object(p)
        }
        self = .object([
            "seq": .number(String(e.seq)), "id": .string(e.id), "type": .string(e.type), "schemaVersion": .number(String(e.schemaVersion)),
            "recordedAt": .string(ISOTime.format(e.recordedAt)), "stream": .string(e.stream), "metadata": Self.metadata(of: e),
            "payload": payload, "previousHash": .string(e.previousHash), "hash": .string(e.hash)
        ])
    }

    /// An event's metadata as an object of strings.
    private static func metadata(of e: LogEntry) -> JSONValue {
        var meta: [String: JSONValue] = [:]
        for m in e.metadata { meta[m.path] = .string(m.value) }
        return .object(meta)
    }

    /// The event as a CloudEvents 1.0 JSON event (structured mode): the required `id`, `source`,
    /// `specversion` and `type`; `time`, `subject` (the item key, else the stream) and
    /// `datacontenttype`; the extensions `strataseq`, `stratastream` and `stratahash`; `data`
    /// holds the metadata, the payload's hash and size, and the payload itself when given (JSON,
    /// else base64 under `payload_base64`).
    package init(cloudEvent e: LogEntry, store: String, payload: [UInt8]? = nil) {
        var data: [String: JSONValue] = ["metadata": Self.metadata(of: e)]
        if let sha = e.payloadSHA256 { data["payloadSha256"] = .string(sha) }
        if let size = e.payloadSize { data["payloadSize"] = .number(String(size)) }
        if let payload {
            if let json = try? JSONValue(parsing: payload) {
                data["payload"] = json
            } else {
                data["payload_base64"] = .string(Data(payload).base64EncodedString())
            }
        }
        let source = "strata:" + (store.hasPrefix("/") ? "" : "/") + store.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!
        self = .object([
            "specversion": .string("1.0"), "id": .string(e.id.isEmpty ? e.hash : e.id), "source": .string(source),
            "type": .string("dev.strata." + e.type), "time": .string(ISOTime.format(e.recordedAt)),
            "subject": .string(e[metadata: "key"].map { "\(e.stream)/\($0)" } ?? e.stream), "datacontenttype": .string("application/json"),
            "strataseq": .number(String(e.seq)), "stratastream": .string(e.stream), "stratahash": .string(e.hash),
            "data": .object(data)
        ])
    }
}

/// Times in JSON: ISO 8601 with milliseconds, UTC (`2026-11-25T15:59:57.817Z`), exactly as
/// `ISO8601DateFormatter` with `.withInternetDateTime` and `.withFractionalSeconds` writes them,
/// by hand: on Linux that formatter is slow enough to dominate `export --events`.
package enum ISOTime {
    package static func format(_ d: Date) -> String {
        // Milliseconds as the formatter takes them: the time rounded to the nearest millisecond.
        let ms = Int64((d.timeIntervalSince1970 * 1000).rounded())
        let (secs, milli) = (ms >= 0 ? ms / 1000 : (ms - 999) / 1000, Int(((ms % 1000) + 1000) % 1000))
        let tm = utc(secs)
        return "\(pad(Int(tm.tm_year) + 1900, 4))-\(pad(Int(tm.tm_mon) + 1, 2))-\(pad(Int(tm.tm_mday), 2))T"
            + "\(pad(Int(tm.tm_hour), 2)):\(pad(Int(tm.tm_min), 2)):\(pad(Int(tm.tm_sec), 2)).\(pad(milli, 3))Z"
    }

    /// The UTC calendar fields of a Unix time in whole seconds.
    static func utc(_ seconds: Int64) -> tm {
        var t = time_t(seconds)
        var fields = tm()
        gmtime_r(&t, &fields)
        return fields
    }

    static func pad(_ v: Int, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}
