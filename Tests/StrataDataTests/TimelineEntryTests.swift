import EventStore
import Testing

@testable import StrataData

/// The `observed` table's values name a pass by small differences from the entry's own seq.
@Suite struct TimelineEntryTests {
    typealias Reader = ObservationTimeline.Reader

    @Test func passesReadBackFromTheirDifferences() throws {
        // A complete pass: its FetchCompleted is the entry; 3 pages before it.
        #expect(try [UInt8]([1, 3]).withUnsafeBytes { try Reader.pass($0, seq: 40) } == 37..<40)
        // A ListNotModified at 50 confirming the pass ending at 40 that started at 37.
        #expect(try [UInt8]([2, 10, 3]).withUnsafeBytes { try Reader.pass($0, seq: 50) } == 37..<40)
        // A varint of more than a byte.
        #expect(try [UInt8]([1, 0x80, 0x01]).withUnsafeBytes { try Reader.pass($0, seq: 1_000) } == 872..<1_000)
        // A detail, an image or a partial pass names none.
        #expect(try [UInt8]([0]).withUnsafeBytes { try Reader.pass($0, seq: 9) } == nil)
    }

    @Test(arguments: [[1], [1, 41], [2, 40, 0], [2, 5], [1, 3, 0], [2, 0x80]] as [[UInt8]])
    func aDamagedEntryIsAnError(_ value: [UInt8]) {
        #expect(throws: EventStoreError.self) { try value.withUnsafeBytes { try Reader.pass($0, seq: 40) } }
    }
}
