package import StrataDomain
package import StrataData

extension RetentionDrop {
    /// What a source's retention (``SourceRetention``) dropped, as compaction and `watch` report it.
    package init(_ s: RetentionSummary) {
        self.init(source: s.source, seq: s.seq, horizon: s.horizon, bodies: s.bodies, bytes: s.bytes)
    }
}
