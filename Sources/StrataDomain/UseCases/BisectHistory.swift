package import Foundation

/// How a check of one point went, as `git bisect run` reads an exit status.
package enum ProbeVerdict: Sendable, Hashable {
    /// Exit 0.
    case good
    /// Exit 1–127 except 125.
    case bad(Int32)
    /// Exit 125: this point cannot be tested.
    case skip
    /// Anything else (above 127, or killed by a signal): stop the search.
    case abort(Int32)

    package init(exitStatus: Int32) {
        switch exitStatus {
        case 0: self = .good
        case 125: self = .skip
        case 1...127: self = .bad(exitStatus)
        default: self = .abort(exitStatus)
        }
    }
}

/// Runs the user's check against the store as it was at a seq.
package protocol PointProbe: Sendable {
    func check(at seq: UInt64) async throws -> ProbeVerdict
}

/// A point the search settled on.
package struct BisectPoint: Sendable, Hashable {
    package var seq: UInt64
    package var observedAt: Date?
    /// The change there (nil for a point given on the command line that is no change point).
    package var change: ChangePoint?
    package init(seq: UInt64, observedAt: Date?, change: ChangePoint?) {
        self.seq = seq
        self.observedAt = observedAt
        self.change = change
    }
}

/// Where a bisect ended.
package struct BisectResult: Sendable, Hashable {
    package var firstBad: BisectPoint
    package var lastGood: BisectPoint
    /// Checks made of candidates (the two given points are checked besides).
    package var steps: Int
    package var candidates: Int
    /// Every check in the order made, the two given points first.
    package var checks: [(seq: UInt64, verdict: ProbeVerdict)]
    /// The items that changed between the last good and the first bad point, per list source.
    package var itemChanges: [CollectionDiff]
    /// The recorded answers that changed there.
    package var responseChanges: [ResponseChange]
    package var sources: [String]

    package static func == (a: BisectResult, b: BisectResult) -> Bool {
        a.firstBad == b.firstBad && a.lastGood == b.lastGood && a.steps == b.steps && a.candidates == b.candidates
            && a.checks.map(\.seq) == b.checks.map(\.seq) && a.checks.map(\.verdict) == b.checks.map(\.verdict)
            && a.itemChanges == b.itemChanges && a.responseChanges == b.responseChanges && a.sources == b.sources
    }
    package func hash(into h: inout Hasher) { h.combine(firstBad) }
}

/// Finds the first point of the log where a check starts failing: `git bisect run` over the
/// points where the recordings changed.
package struct BisectHistory: Sendable {
    let traffic: any TrafficRepository
    let log: any EventLogRepository
    let sources: any SourceRepository
    let diff: DiffCollection

    package init(traffic: any TrafficRepository, log: any EventLogRepository, sources: any SourceRepository, diff: DiffCollection) {
        self.traffic = traffic
        self.log = log
        self.sources = sources
        self.diff = diff
    }

    /// Why a bisect could not answer.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// - Throws: ``Failure`` when the good point is bad, the bad point good, nothing changed
    ///   between them, only skipped points are left, or a check aborts; ``RepositoryError`` for
    ///   an unknown source or a point after the head.
    package func callAsFunction(
        good: PointInTime, bad: PointInTime, sources names: [String], probe: any PointProbe, onCheck: (@Sendable (UInt64, ProbeVerdict) -> Void)? = nil
    ) async throws -> BisectResult {
        for name in names { _ = try await sources.source(named: name) }
        let g = try await log.resolve(good)
        let b = try await log.resolve(bad)
        guard g < b else {
            throw Failure(description: "the good point (seq \(g)) must come before the bad one (seq \(b)); swap them or pick other points")
        }
        var checks: [(seq: UInt64, verdict: ProbeVerdict)] = []
        func check(_ seq: UInt64) async throws -> ProbeVerdict {
            let v = try await probe.check(at: seq)
            checks.append((seq, v))
            onCheck?(seq, v)
            if case .abort(let code) = v {
                throw Failure(description: "the command exited \(code) at seq \(seq) (above 127, or a signal): bisect stopped; exit 125 skips a point")
            }
            return v
        }
        switch try await check(g) {
        case .good: break
        case .bad(let code):
            throw Failure(description: "the good point (seq \(g)) is already bad: the command exited \(code) there; give an earlier good point")
        case .skip, .abort:
            throw Failure(description: "the good point (seq \(g)) cannot be tested (the command exited 125 there); give another good point")
        }
        switch try await check(b) {
        case .bad: break
        case .good: throw Failure(description: "the bad point (seq \(b)) is good: the command exited 0 there; give a later bad point, or check the command")
        case .skip, .abort:
            throw Failure(description: "the bad point (seq \(b)) cannot be tested (the command exited 125 there); give another bad point")
        }
        let candidates = try await traffic.changePoints(sources: names, after: g, through: b)
        guard !candidates.isEmpty else {
            throw Failure(
                description:
                    "nothing \(names.isEmpty ? "any source" : names.joined(separator: ", ")) recorded changed between seq \(g) and seq \(b), yet the command's outcome did: it depends on something else"
            )
        }
        // The last candidate answers as the bad point does (nothing of these sources changed
        // after it), so it is bad without a check: the first bad one is among all n of them.
        var lo = -1  // the last known good (-1: the good point)
        var hi = candidates.count - 1  // the first known bad
        var skipped = Set<Int>()
        var steps = 0
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            // A skipped point is replaced by the nearest untested one between the bounds.
            let order = (lo + 1..<hi).filter { !skipped.contains($0) }.sorted { abs($0 - mid) < abs($1 - mid) || (abs($0 - mid) == abs($1 - mid) && $0 < $1) }
            guard let probeAt = order.first else {
                let seqs = (lo + 1...hi).map { String(candidates[$0].seq) }.joined(separator: ", ")
                throw Failure(description: "only skipped points are left: the first bad point is one of seq \(seqs)")
            }
            steps += 1
            switch try await check(candidates[probeAt].seq) {
            case .good: lo = probeAt
            case .bad: hi = probeAt
            case .skip: skipped.insert(probeAt)
            case .abort: break
            }
        }
        let firstBad = candidates[hi]
        let lastGood = lo >= 0 ? BisectPoint(seq: candidates[lo].seq, observedAt: candidates[lo].observedAt, change: candidates[lo]) : try await point(g)
        let involved = names.isEmpty ? [firstBad.source] : names
        var itemChanges: [CollectionDiff] = []
        for name in involved {
            guard !(try await sources.source(named: name).isRecorded) else { continue }
            let d = try await diff(source: name, from: .seq(lastGood.seq), to: .seq(firstBad.seq))
            if !d.items.isEmpty { itemChanges.append(d) }
        }
        let responses = try await traffic.responseChanges(sources: involved, after: lastGood.seq, through: firstBad.seq)
        return BisectResult(
            firstBad: BisectPoint(seq: firstBad.seq, observedAt: firstBad.observedAt, change: firstBad), lastGood: lastGood, steps: steps,
            candidates: candidates.count, checks: checks, itemChanges: itemChanges, responseChanges: responses, sources: names)
    }

    private func point(_ seq: UInt64) async throws -> BisectPoint {
        let e = try await log.entries(LogQuery(fromSeq: seq, toSeq: seq, limit: 1)).first
        return BisectPoint(seq: seq, observedAt: e?.recordedAt, change: nil)
    }
}
