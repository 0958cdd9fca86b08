import CZstd
import Foundation
import StrataJSON
import Synchronization

/// Codec 6: a version of a JSON body stored as its *skeleton* and the listed objects it brings to
/// its *window* of versions (``BlobCodec/window``), so each object version (a page's item, an
/// entry of a side list) is stored once in its window, and a version that changes a few items
/// stores those items and a few bytes of skeleton.
///
/// A window starts on any stored body, its *keyframe* (whole, a delta or a window row), and runs
/// up a chain of codec 6 rows. The objects its rows bring are its *elements*, numbered in the
/// order rows bring them. A row's skeleton is its stored form with each object listed in it
/// (``JSONSpans/listedObjects(in:)``) of at least ``minimumElement`` bytes replaced by a token:
/// `0x03 offset length` for the same bytes in the keyframe's form, `0x01 n` for element n,
/// `0x02 length` for an object this row brings (the next number; its bytes are the next
/// `length` bytes of the row's objects). Values are in base-126 digits of 0x04 and up
/// (``digits(_:_:)``), and minified JSON never holds the bytes 0x01–0x03 (control characters are
/// escaped in strings), so a token is found by its first byte; a body that holds one is not
/// stored so. A read finds every object by its token: it never parses the keyframe.
///
/// The row: `u8 6 | varint size | 8-byte seal | varint base | varint depth | u8 flags |
/// varint skeletonSize | varint objectsSize | varint skeletonFrameSize | skeleton frame | objects`,
/// `flags` 1 for a row that starts a window, 2 for one whose objects start the stream again. The
/// skeleton frame is compressed with the skeleton of the row below as its prefix, each `0x02`
/// token of that one written as the `0x01` token it became (the keyframe's form for a window's
/// first row), so a version whose items did not change costs a few bytes. The objects of all
/// rows of a window are one zstd stream (magicless, windowLog ``windowLog``), started on the
/// keyframe's form as its prefix by the first row that brings any and flushed at the end of
/// each row's objects, so each row's part decodes once the parts before it are decoded, and each
/// object is compressed against every object the window holds (the version of an item before
/// it) at the cost of compressing its own bytes. A writer that did not write the window's last
/// row (another process, a restart) goes on with the window read from the log and starts the
/// stream again (flags 2), on the keyframe's form and the window's objects as its prefix. The
/// seal covers everything after it, as codec 4's. A row builds on the one below it only, so a
/// read, `verify`, an erasure's rewrite and a migration walk a window as a chain.
///
/// Why a stream and not a frame per row against the window as a prefix: loading a prefix costs
/// time in proportion to it at the levels that find an item's last version (`lazy2` and up),
/// 1.4 ms a row on the fires history at level 9; at level 3 the `items` history's objects took
/// 1.96 MB. The stream at level 15 took them to 1.07 MB, a row's objects compressed in a
/// fraction of a millisecond (docs/benchmarks.md, "Windows of versions in the log").
enum BodyWindow {
    /// The byte that starts a reference to an element of the window in a skeleton.
    static let reference: UInt8 = 0x01
    /// The byte that starts an object a row brings (in a skeleton as stored).
    static let brought: UInt8 = 0x02
    /// The byte that starts a reference to bytes of the keyframe's form.
    static let inKeyframe: UInt8 = 0x03
    /// Shorter objects stay in the skeleton: a reference would not be much smaller.
    static let minimumElement = 24
    /// A window ends when its keyframe and objects would pass this; the next version starts a
    /// chain again (a window on the last version would read both). Bounds what a read decodes
    /// and the stream's window: at 1 MiB outages' 500 KB lists read in 0.93 ms at p99 instead of
    /// 2.4, but the store grew from 8.3 to 12.3 MB, a keyframe every few versions.
    static let spaceLimit = 2 << 20
    /// The objects stream's window: the keyframe and every object up to ``spaceLimit`` stay in
    /// reach.
    static let windowLog: Int32 = 22
    /// The compressor's tables (2^n entries of 4 bytes; the binary tree two a position): 12 MB a
    /// window instead of the level's 48 MB for a stream of unknown size.
    static let hashLog: Int32 = 20
    static let chainLog: Int32 = 21
    /// The objects stream's zstd level.
    static let objectsLevel: Int32 = 15

    /// The listed objects of `form` worth a reference, by byte range; nil when `form` is not JSON.
    static func elements(of form: UnsafeRawBufferPointer) -> [Range<Int>]? {
        (try? JSONSpans.listedObjects(in: form))?.filter { $0.count >= minimumElement }
    }

    /// A window after one of its rows, as a read or the writer holds it.
    struct State {
        /// The keyframe's stored form, kept in place while the objects stream is read or written
        /// (zstd refers to it as the stream's prefix).
        let keyframe: Pinned
        /// The objects the rows up to this one brought, in order.
        var objects: [UInt8] = []
        /// Each element: where it is in `objects`, and its length.
        var elements: [(offset: Int, length: Int)] = []
        /// This row's skeleton (the keyframe's form for the keyframe itself).
        var skeleton: [UInt8]
        /// The size of this row's stored form.
        var size: Int

        /// The window that starts on a body whose stored form is `form`.
        init(keyframe form: [UInt8]) {
            keyframe = form.withUnsafeBytes { Pinned($0) }
            skeleton = form
            size = form.count
            objects.reserveCapacity(spaceLimit - min(form.count, spaceLimit))
        }

        /// The keyframe's form and the objects so far, in one place: the prefix of a stream
        /// started again (the writer's and the reader's the same bytes).
        func space() -> Pinned {
            objects.withUnsafeBytes { Pinned(keyframe.bytes, $0) }
        }

        /// Element `n`'s bytes.
        func element(_ n: Int, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
            let (offset, length) = elements[n]
            try objects.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + length)])) }
        }

        /// This row's stored form: the skeleton with each token replaced by what it names.
        func form() throws -> [UInt8] {
            var failed = false
            let out = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                count = 0
                let o = UnsafeMutableRawBufferPointer(buffer)
                var written = 0
                func put(_ part: UnsafeRawBufferPointer) -> Bool {
                    guard part.count <= size - written else { return false }
                    if !part.isEmpty { UnsafeMutableRawBufferPointer(rebasing: o[written..<(written + part.count)]).copyMemory(from: part) }
                    written += part.count
                    return true
                }
                failed = !skeleton.withUnsafeBytes { s in
                    objects.withUnsafeBytes { objects in
                        var i = 0
                        while i < s.count {
                            var end = i
                            while end < s.count, s[end] > BodyWindow.inKeyframe { end += 1 }
                            guard put(UnsafeRawBufferPointer(rebasing: s[i..<end])) else { return false }
                            guard end < s.count else { break }
                            var at = end + 1
                            switch s[end] {
                            case BodyWindow.reference:
                                guard let n = BodyWindow.digits(s, &at), n < elements.count else { return false }
                                let (offset, length) = elements[n]
                                guard put(UnsafeRawBufferPointer(rebasing: objects[offset..<(offset + length)])) else { return false }
                            case BodyWindow.inKeyframe:
                                guard let offset = BodyWindow.digits(s, &at), let length = BodyWindow.digits(s, &at), offset <= keyframe.count,
                                    length <= keyframe.count - offset,
                                    put(UnsafeRawBufferPointer(rebasing: keyframe.bytes[offset..<(offset + length)]))
                                else { return false }
                            default:
                                return false
                            }
                            i = at
                        }
                        return written == size
                    }
                }
                count = failed ? 0 : size
            }
            guard !failed else { throw ByteReader.Truncated() }
            return out
        }
    }

    /// Bytes at a fixed address for as long as they live: a zstd stream's prefix.
    final class Pinned: @unchecked Sendable {
        let bytes: UnsafeRawBufferPointer
        var count: Int { bytes.count }

        /// `parts` one after another.
        init(_ parts: UnsafeRawBufferPointer...) {
            let count = parts.reduce(0) { $0 + $1.count }
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 1)
            var at = 0
            for part in parts where !part.isEmpty {
                UnsafeMutableRawBufferPointer(rebasing: b[at..<(at + part.count)]).copyMemory(from: part)
                at += part.count
            }
            bytes = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(b)[..<count])
        }

        deinit { UnsafeMutableRawPointer(mutating: bytes.baseAddress)?.deallocate() }
    }

    /// The writer's side of a window: its state, where each element is by its bytes, and the
    /// objects stream's compressor, part-way through its frame.
    final class Writer {
        var state: State
        /// The seq and hash prefix of the window's last row: the window goes on only above it.
        var seq: UInt64
        var hash: ArraySlice<UInt8>
        /// Where each object the window holds is, by a hash of its bytes: in the keyframe (a
        /// range of its form) or an element (its number).
        private var known: [Int: [Held]] = [:]
        private enum Held {
            case keyframe(Range<Int>)
            case element(Int)
        }
        private let cctx: OpaquePointer

        /// A window on `form`, the stored form of the body at `seq` (hash prefix `hash`).
        convenience init(keyframe form: [UInt8], seq: UInt64, hash: ArraySlice<UInt8>) {
            self.init(State(keyframe: form), seq: seq, hash: hash, starts: true)
        }

        /// The window `state` after its row at `seq` (hash prefix `hash`), read from the log: its
        /// stream starts again at the next row that brings objects.
        convenience init(resuming state: State, seq: UInt64, hash: ArraySlice<UInt8>) {
            self.init(state, seq: seq, hash: hash, starts: false)
        }

        private init(_ state: State, seq: UInt64, hash: ArraySlice<UInt8>, starts: Bool) {
            self.state = state
            self.seq = seq
            self.hash = hash
            self.starts = starts
            restarts = !starts
            cctx = ZSTD_createCCtx()
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, objectsLevel)
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, windowLog)
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_hashLog, hashLog)
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_chainLog, chainLog)
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0)
            ZSTD_CCtx_setParameter(cctx, ZstdContext.formatParameter, ZstdContext.magicless)
            if starts { ZSTD_CCtx_refPrefix(cctx, state.keyframe.bytes.baseAddress, state.keyframe.count) }
            for r in BodyWindow.elements(of: state.keyframe.bytes) ?? [] {
                known[Self.key(UnsafeRawBufferPointer(rebasing: state.keyframe.bytes[r])), default: []].append(.keyframe(r))
            }
            for n in state.elements.indices { note(n) }
        }

        deinit { ZSTD_freeCCtx(cctx) }

        /// Whether no row was written yet: the next row starts the window.
        private var starts: Bool
        /// Whether the stream starts again at the next row that brings objects.
        private var restarts: Bool
        /// The prefix of the stream started again, kept while it runs.
        private var prefix: Pinned?
        /// Whether a version did not fit (``spaceLimit``): the window takes no more.
        private(set) var full = false

        private func note(_ n: Int) {
            state.element(n) { known[Self.key($0), default: []].append(.element(n)) }
        }

        /// Where the window holds `element`'s bytes, if it does.
        private func find(_ element: UnsafeRawBufferPointer) -> Held? {
            known[Self.key(element)]?.first { held in
                switch held {
                case .keyframe(let r): return UnsafeRawBufferPointer(rebasing: state.keyframe.bytes[r]).elementsEqual(element)
                case .element(let n):
                    var same = false
                    state.element(n) { same = $0.elementsEqual(element) }
                    return same
                }
            }
        }

        /// A token: its byte, then each value in digits (``BodyWindow/digits(_:_:)``).
        private static func token(_ byte: UInt8, _ values: Int...) -> [UInt8] {
            var out = [byte]
            for v in values { BodyWindow.digits(v) { out.append($0) } }
            return out
        }

        private static func key(_ bytes: UnsafeRawBufferPointer) -> Int {
            var h = Hasher()
            h.combine(bytes: bytes)
            return h.finalize()
        }

        /// The codec 6 row of `content` (a body's stored form) above the window's last row, at
        /// `depth`; the window then ends at it (`seq`, `hash`). Nil when `content` cannot be
        /// stored so (not JSON, fewer than two objects worth a reference, a byte up to `0x03`,
        /// or a window that would pass ``spaceLimit``), the window then unchanged; throws
        /// when zstd fails, after which the window must not be used again.
        func row(_ content: [UInt8], depth: Int, seq newSeq: UInt64, hash newHash: ArraySlice<UInt8>, context: ZstdContext) throws -> [UInt8]? {
            // JSON holds no byte under 0x20 outside its whitespace (a string's control characters
            // are escaped): a body with a token byte fails here, as any body that is not JSON.
            guard let ranges = content.withUnsafeBytes({ BodyWindow.elements(of: $0) }), ranges.count >= 2 else { return nil }
            var skeleton: [UInt8] = []  // as stored: 0x02 and its length for an object brought here
            var resolved: [UInt8] = []  // as the next row's prefix: each 0x02 its 0x01
            skeleton.reserveCapacity(content.count / 8 + ranges.count * 4)
            resolved.reserveCapacity(content.count / 8 + ranges.count * 4)
            var objects: [UInt8] = []
            var fresh: [Int: [Int]] = [:]  // brought here, by key: their numbers
            let base = state.elements.count
            var bounds = [0]  // where each brought object starts in `objects`, then its end
            content.withUnsafeBytes { c in
                var literal = 0
                for r in ranges {
                    let text = UnsafeRawBufferPointer(rebasing: c[literal..<r.lowerBound])
                    skeleton.append(bytes: text)
                    resolved.append(bytes: text)
                    literal = r.upperBound
                    let element = UnsafeRawBufferPointer(rebasing: c[r])
                    let token: [UInt8]
                    switch find(element) {
                    case .keyframe(let k)?:
                        token = Self.token(inKeyframe, k.lowerBound, k.count)
                    case .element(let n)?:
                        token = Self.token(reference, n)
                    case nil:
                        // Brought here: once, a second copy in the same version refers to it.
                        let key = Self.key(element)
                        let again = fresh[key]?.first { n in
                            objects.withUnsafeBytes { UnsafeRawBufferPointer(rebasing: $0[bounds[n - base]..<bounds[n - base + 1]]).elementsEqual(element) }
                        }
                        if let again {
                            token = Self.token(reference, again)
                        } else {
                            let n = base + bounds.count - 1
                            fresh[key, default: []].append(n)
                            resolved += Self.token(reference, n)
                            skeleton += Self.token(brought, r.count)
                            objects.append(bytes: element)
                            bounds.append(objects.count)
                            continue
                        }
                    }
                    skeleton += token
                    resolved += token
                }
                let tail = UnsafeRawBufferPointer(rebasing: c[literal...])
                skeleton.append(bytes: tail)
                resolved.append(bytes: tail)
            }
            guard state.keyframe.count + state.objects.count + objects.count <= spaceLimit else {
                full = true
                return nil
            }
            guard let skeletonFrame = context.compress(skeleton, prefix: state.skeleton, level: DeltaChains.deltaLevel(skeleton.count)) else {
                throw ByteReader.Truncated()
            }
            let restarting = restarts && !objects.isEmpty
            if restarting {
                let p = state.space()
                ZSTD_CCtx_refPrefix(cctx, p.bytes.baseAddress, p.count)
                prefix = p
            }
            let part = try compress(objects)
            var w = ByteWriter(capacity: skeletonFrame.count + part.count + 48)
            w.u8(BlobCodec.window)
            w.varint(content.count)
            let sealAt = w.bytes.count
            w.raw(repeatElement(0, count: BlobCodec.sealSize))
            w.varint(seq)
            w.varint(depth)
            w.u8(starts ? 1 : restarting ? 2 : 0)
            w.varint(skeleton.count)
            w.varint(objects.count)
            w.varint(skeletonFrame.count)
            w.raw(skeletonFrame)
            w.raw(part)
            BlobCodec.seal(&w.bytes, at: sealAt)
            // The window after this row.
            starts = false
            if restarting { restarts = false }
            let firstNew = state.objects.count
            state.objects += objects
            for (start, end) in zip(bounds, bounds.dropFirst()) {
                state.elements.append((firstNew + start, end - start))
                note(state.elements.count - 1)
            }
            state.skeleton = resolved
            state.size = content.count
            seq = newSeq
            hash = newHash
            return w.bytes
        }

        /// `objects` through the stream, flushed: the row's part.
        private func compress(_ objects: [UInt8]) throws -> [UInt8] {
            guard !objects.isEmpty else { return [] }
            let bound = ZSTD_compressBound(objects.count) + 64
            var out = [UInt8](repeating: 0, count: bound)
            var produced = 0
            try objects.withUnsafeBytes { i in
                try out.withUnsafeMutableBytes { o in
                    var input = ZSTD_inBuffer(src: i.baseAddress, size: i.count, pos: 0)
                    var output = ZSTD_outBuffer(dst: o.baseAddress, size: o.count, pos: 0)
                    while true {
                        let left = ZSTD_compressStream2(cctx, &output, &input, ZSTD_e_flush)
                        guard ZSTD_isError(left) == 0 else { throw ByteReader.Truncated() }
                        if left == 0 { break }
                        guard output.pos < output.size else { throw ByteReader.Truncated() }
                    }
                    produced = output.pos
                }
            }
            out.removeLast(out.count - produced)
            return out
        }
    }

    /// The reader's side of a window's objects stream, part-way through its frame.
    final class Reader {
        private let dctx: OpaquePointer
        private var started = false
        /// The prefix of a stream started again: the keyframe and the objects before it.
        private var prefix: Pinned?

        init() {
            // A decoder keeps its window buffer (4 MiB) between streams: a fresh one per read
            // cost a mapping and its page faults, 2 ms at p99 on the fires history.
            dctx = Self.pool.withLock { $0.popLast()?.pointer } ?? ZSTD_createDCtx()
            ZSTD_DCtx_setParameter(dctx, ZstdContext.decompressFormatParameter, ZstdContext.magicless)
        }

        deinit {
            ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters)
            let handle = Handle(pointer: dctx)
            let kept = Self.pool.withLock { pool in
                guard pool.count < 4 else { return false }
                pool.append(handle)
                return true
            }
            if !kept { ZSTD_freeDCtx(dctx) }
        }

        private static let pool = Mutex<[Handle]>([])

        // Unchecked: a decoder no reader holds, passed whole to the next.
        private struct Handle: @unchecked Sendable {
            let pointer: OpaquePointer
        }

        /// The stream starts again at the next part, on the window so far as its prefix.
        func restart(_ state: State) {
            ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only)
            prefix = state.space()
            started = false
        }

        /// Decodes a row's part of the stream, `size` bytes of objects, appending them to `state`.
        func read(_ part: UnsafeRawBufferPointer, size: Int, into state: inout State) throws {
            guard size > 0 else {
                guard part.isEmpty else { throw ByteReader.Truncated() }
                return
            }
            if !started {
                let p = prefix ?? state.keyframe
                ZSTD_DCtx_refPrefix(dctx, p.bytes.baseAddress, p.count)
                started = true
            }
            let at = state.objects.count
            state.objects += repeatElement(0, count: size)
            try state.objects.withUnsafeMutableBytes { o in
                var input = ZSTD_inBuffer(src: part.baseAddress, size: part.count, pos: 0)
                var output = ZSTD_outBuffer(dst: o.baseAddress! + at, size: size, pos: 0)
                while output.pos < size || input.pos < input.size {
                    let before = (input.pos, output.pos)
                    let rc = ZSTD_decompressStream(dctx, &output, &input)
                    // An error, or no progress: a part shorter or longer than its objects (damaged).
                    guard ZSTD_isError(rc) == 0, before != (input.pos, output.pos) else { throw ByteReader.Truncated() }
                }
            }
        }
    }

    /// Steps `window` over the row `link` (a codec 6 row's header): the window below it, or for a
    /// row that starts a window, nil and `form`, the stored form of the row below.
    static func step(_ window: inout (state: State, reader: Reader)?, form: [UInt8]?, _ link: DeltaHeader, context: ZstdContext) throws {
        guard let parts = link.window else { throw ByteReader.Truncated() }
        if parts.starts {
            guard let form else { throw ByteReader.Truncated() }
            window = (State(keyframe: form), Reader())
        }
        guard window != nil else { throw ByteReader.Truncated() }
        let stored = try context.decompress(parts.skeletonFrame, prefix: window!.state.skeleton, size: parts.skeletonSize)
        if parts.restarts { window!.reader.restart(window!.state) }
        let at = window!.state.objects.count
        try window!.reader.read(parts.objectsFrame, size: parts.objectsSize, into: &window!.state)
        window!.state.skeleton = try resolve(stored, objects: at..<(at + parts.objectsSize), elements: &window!.state.elements)
        window!.state.size = link.size
    }

    /// `stored` (a row's skeleton as stored) with each `0x02` token replaced by the `0x01` token
    /// of the element it brings, those elements (the row's objects, `objects` in the window's,
    /// in order) added to `elements`. Token values are in digits of 0x04 and up, so the `0x02`
    /// bytes are found with `memchr` and everything between them is copied whole.
    static func resolve(_ stored: [UInt8], objects: Range<Int>, elements: inout [(offset: Int, length: Int)]) throws -> [UInt8] {
        var next = objects.lowerBound
        var out: [UInt8] = []
        try stored.withUnsafeBytes { s in
            out.reserveCapacity(s.count + 64)
            var i = 0
            while i < s.count {
                let rest = UnsafeRawBufferPointer(rebasing: s[i...])
                guard let base = rest.baseAddress, let found = memchr(base, Int32(brought), rest.count) else {
                    out.append(bytes: rest)
                    break
                }
                let end = i + (UnsafeRawPointer(found) - base)
                out.append(bytes: UnsafeRawBufferPointer(rebasing: s[i..<end]))
                var at = end + 1
                guard let length = digits(s, &at), length <= objects.upperBound - next else { throw ByteReader.Truncated() }
                out.append(reference)
                digits(elements.count) { out.append($0) }
                elements.append((next, length))
                next += length
                i = at
            }
        }
        guard next == objects.upperBound else { throw ByteReader.Truncated() }
        return out
    }

    /// `value` in base-126 digits, least significant first, each a byte of 0x04 and up: 0x04 +
    /// digit for all but the last, 0x82 + digit for the last. A token's values never hold the
    /// bytes 0x01–0x03, so tokens are found by their first byte alone.
    static func digits(_ value: Int, _ emit: (UInt8) -> Void) {
        var v = value
        while v >= 126 {
            emit(UInt8(4 + v % 126))
            v /= 126
        }
        emit(UInt8(0x82 + v))
    }

    /// The value written by ``digits(_:_:)`` at `at` in `bytes`, moving `at` past it; nil when
    /// it is damaged or runs past the end.
    static func digits(_ bytes: UnsafeRawBufferPointer, _ at: inout Int) -> Int? {
        var value = 0
        var scale = 1
        while at < bytes.count {
            let b = Int(bytes[at])
            at += 1
            guard b >= 4 else { return nil }
            if b >= 0x82 { return value + (b - 0x82) * scale }
            value += (b - 4) * scale
            guard scale < 1 << 40 else { return nil }
            scale *= 126
        }
        return nil
    }
}

extension Array where Element == UInt8 {
    /// Appends raw bytes with one copy (`append(contentsOf:)` of a raw buffer goes byte by byte:
    /// a third of a window read).
    mutating func append(bytes: UnsafeRawBufferPointer) {
        append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
    }
}
