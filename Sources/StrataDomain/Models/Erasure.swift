package import Foundation

/// What forgetting items did: the erasure's seq and how many stored bodies it changed.
package struct ForgetResult: Sendable, Equatable {
    package var source: String
    package var seq: UInt64
    package var items: Int
    /// List bodies the items were cut out of.
    package var bodiesRewritten: Int
    /// Details and images erased whole.
    package var bodiesErased: Int

    package init(source: String, seq: UInt64, items: Int, bodiesRewritten: Int, bodiesErased: Int) {
        self.source = source; self.seq = seq; self.items = items; self.bodiesRewritten = bodiesRewritten; self.bodiesErased = bodiesErased
    }
}

/// An item that was forgotten: when, at which seq, and why (never what it held).
package struct ErasureRecord: Sendable, Equatable {
    package var seq: UInt64
    package var reason: String
    package var erasedAt: Date

    package init(seq: UInt64, reason: String, erasedAt: Date) {
        self.seq = seq; self.reason = reason; self.erasedAt = erasedAt
    }

    /// "erased at seq 42: a GDPR request": what a read of the item answers.
    package var message: String { "erased at seq \(seq)" + (reason.isEmpty ? "" : ": \(reason)") }
}
