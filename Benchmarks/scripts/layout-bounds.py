#!/usr/bin/env python3
"""What a body layout with a bounded read can store a scraping history in (docs/benchmarks.md).

usage: layout-bounds.py REPO FILE [--items KEY] [--id KEY] [--versions N] [--shared-only]
                        [--by-item] [--dump FILE]

Reads the first N versions of FILE in REPO (commit order) and compresses them, outside Strata,
the ways a layout could, each read bounded as the store's is (a read decodes at most
min(128, max(8, 20 MiB / size)) versions of a chain, as `DeltaChains.chainLength` does):

- chains: a keyframe at level 11, then each version a zstd delta against the one before it
  (level 9 for bodies of 64 KiB or more, else 3), a delta of 4 KiB or more tried again against
  the version before that: the store's body rows without anchors.
- minified: the same chains over each version without its pretty-printing whitespace, where
  laying it out again gives the version back (what Strata stores since format 9, codec 5).
- blocks: the same chains, keyframes at level 19 and the versions after them in solid blocks of
  16 at level 15 with the version before the block as their prefix: what compressing versions
  together, not one delta at a time, adds with the same read bound.
- skeleton: each version with every object that has the id key (its items, and the same
  objects wherever else the document repeats them) replaced by a reference to that object's
  version, canonical JSON, in the same chains; beside it the distinct object versions once, in rows of up to 32 versions of one item compressed in blocks of 64 KiB at
  level 15 (how the item history stores them). The whole versions, canonical too, in the same
  chains for comparison: the residual that would give back each version's exact bytes is not
  counted.
- shared: one store of object versions for the bodies and the item history together, with a
  bounded read (``shared``): each chain's keyframe whole, the versions after it as skeletons
  against the one before, the objects its keyframe does not hold once in the chain's window,
  compressed against the keyframe, and the item history as an index over them (`--by-item`:
  each window's objects ordered by item as it closes, not in the order versions bring them). It
  prints the bytes a body read decompresses, beside the chains', and how many windows and
  blocks walking one item's history decodes; `--dump FILE` writes every read's
  decompressions (a body from its window and from the chains, an item from its window, a block
  of the item history's rows now) for `replay-reads.c`, which times them in C as the store reads
  (`cc -O2 -o replay-reads Benchmarks/scripts/replay-reads.c -lzstd`; `make bench-layout` runs it).

Needs the `zstandard` package (Benchmarks/.venv: `make bench-layout` installs it).
"""

import argparse
import json
import re
import struct
import subprocess

import zstandard

CHAIN_BYTES = 20 << 20


def chain_length(size):
    return min(128, max(8, CHAIN_BYTES // max(size, 1)))


def compressed(data, level, prefix=b""):
    window = max(17, min(27, (len(data) + len(prefix)).bit_length()))
    params = zstandard.ZstdCompressionParameters.from_level(level, window_log=window)
    dictionary = zstandard.ZstdCompressionDict(prefix, dict_type=zstandard.DICT_TYPE_RAWCONTENT) if prefix else None
    return zstandard.ZstdCompressor(compression_params=params, dict_data=dictionary).compress(data)


def compress(data, level, prefix=b""):
    return len(compressed(data, level, prefix))


def decompressed(frame, prefix=b""):
    dictionary = zstandard.ZstdCompressionDict(prefix, dict_type=zstandard.DICT_TYPE_RAWCONTENT) if prefix else None
    return zstandard.ZstdDecompressor(dict_data=dictionary).decompress(frame)


def chain_frames(versions):
    """The store's chains: a keyframe, then deltas against the version before (or the one before
    that). Each version's frame, its base (None: a keyframe) and its chain's keyframe."""
    frames, depth, keyframe = [], 0, 0
    for i, body in enumerate(versions):
        if i == 0 or depth + 1 >= chain_length(len(body)):
            frames.append((compressed(body, 11), None, i))
            depth, keyframe = 0, i
            continue
        level = 9 if len(body) >= 64 << 10 else 3
        frame, base = compressed(body, level, versions[i - 1]), i - 1
        if len(frame) >= 4096 and depth >= 1:
            other = compressed(body, level, versions[i - 2])
            if len(other) < len(frame):
                frame, base = other, i - 2
        frames.append((frame, base, keyframe))
        depth += 1
    return frames


def chains(versions):
    return sum(len(frame) for frame, _, _ in chain_frames(versions))


def blocks(versions, size=16):
    """The same chains, their versions after the keyframe compressed 16 together."""
    total, start = 0, 0
    while start < len(versions):
        length = chain_length(len(versions[start]))
        chain = versions[start : start + length]
        total += compress(chain[0], 19)
        for j in range(1, len(chain), size):
            total += compress(b"".join(chain[j : j + size]), 15, chain[j - 1])
        start += length
    return total


TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[ \t\r\n]+|[^" \t\r\n]+', re.S)
STRUCTURE = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},:]|[^"\[\]{},:]+', re.S)


def laid_out(form, unit):
    """`form` laid out as json.dumps(indent=) does: a member a line, ": " after a key."""
    out, level, tokens = bytearray(), 0, STRUCTURE.findall(form)
    for k, t in enumerate(tokens):
        if t in (b"[", b"{"):
            out += t
            if k + 1 < len(tokens) and tokens[k + 1] == (b"]" if t == b"[" else b"}"):
                continue
            level += 1
            out += b"\n" + unit * level
        elif t in (b"]", b"}"):
            if out[-1:] in (b"[", b"{"):
                out += t
            else:
                level -= 1
                out += b"\n" + unit * level + t
        elif t == b",":
            out += b",\n" + unit * level
        elif t == b":":
            out += b": "
        else:
            out += t
    return bytes(out)


def minified(body):
    """The body without its layout when laying it out again gives it back, else the body."""
    if len(body) < 4 or body[:1] not in (b"{", b"[") or body[1:2] != b"\n":
        return body
    unit = body[2 : 2 + len(body[2:]) - len(body[2:].lstrip(body[2:3]))]
    form = b"".join(t for t in TOKENS.findall(body) if not t[:1].isspace())
    return form if laid_out(form, unit) + (b"\n" if body.endswith(b"\n") else b"") == body else body


def canonical(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def skeleton(versions, items_key):
    """Each version with every object that has an id (the items, and the same objects wherever
    else the document repeats them) as a reference, and the distinct object versions by id."""
    numbers, rows, skeletons, wholes = {}, {}, [], []

    def number(value):
        text = canonical(value)
        key = (json.dumps(value[args.id]), text)
        if key not in numbers:
            numbers[key] = len(numbers)
            rows.setdefault(key[0], []).append(text)
        return numbers[key]

    for body in versions:
        try:
            document = json.loads(body)
            items = document[items_key] if items_key else document
            if not isinstance(items, list):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            skeletons.append(body)
            wholes.append(body)
            continue
        wholes.append(canonical(document))
        found = []
        shape = refer(document, found)
        skeletons.append(canonical(fill(shape, iter([number(value) for value in found]))))
    # The item history: rows of up to 32 versions of one item, in blocks of 64 KiB.
    stored, block = 0, b""
    for texts in rows.values():
        for r in range(0, len(texts), 32):
            block += b"\n".join(texts[r : r + 32])
            if len(block) >= 64 << 10:
                stored += compress(block, 15)
                block = b""
    if block:
        stored += compress(block, 15)
    distinct = b"\n".join(t for texts in rows.values() for t in texts)
    return chains(skeletons), stored, compress(distinct, 19), len(numbers), chains(wholes)


def shared(forms, times):
    """One store of object versions for the bodies and the item history together, each read
    bounded. A body chain starts (as the store's) with its version whole, the objects inside it,
    and the chain's window numbers those objects in document order; each version after it is its
    skeleton (every object with an id a reference: its number in the window) compressed against
    the skeleton before it, and an object the window does not hold yet is stored once, in the
    order versions bring it (`--by-item`: by item, as the window closes), in the window's blocks
    of up to 136 KiB compressed at level 15 with the keyframe's whole version as their prefix.
    The item history is then an index: per item, each version's (version, reference, time). A body read decodes the keyframe, its skeleton,
    the skeleton chain and the window's blocks up to the last object it needs; an item read, the
    keyframe and one block. Returns the sizes, each read's decompressions beside the same reads
    from the chains of `forms` and from the item history's rows now (rows of up to 32
    versions of one item, in blocks of 136 KiB at level 15, a read decompressing one block), and
    per item the windows and blocks its versions are in."""
    block_limit = 136 << 10
    sizes = dict(keyframes=0, skeletons=0, objects=0, index=0)
    frames, blocks, skeletons, ends, index, rows, last = [], [], [], {}, {}, {}, {}
    numbers, pending, keyframe, depth = {}, [], 0, 0

    def close_window():
        # The window's objects in the order versions brought them, or (--by-item) by item.
        nonlocal pending
        current = bytearray()
        for _, text, number in sorted(pending, key=lambda p: p[0]) if args.by_item else pending:
            if current and len(current) + len(text) > block_limit:
                close_block(current)
                current = bytearray()
            current += text
            ends[(keyframe, number)] = (len(blocks), len(current))
        close_block(current)
        pending = []

    def close_block(current):
        if current:
            frame = compressed(bytes(current), 15, forms[keyframe])
            sizes["objects"] += len(frame)
            blocks.append((frame, keyframe))

    for i, form in enumerate(forms):
        try:
            document = json.loads(form)
        except ValueError:
            document = None
        if i == 0 or depth + 1 >= chain_length(len(form)) or document is None or frames[-1][0] is None:
            close_window()
            keyframe, depth, numbers = i, 0, {}
            whole = compressed(form, 11)
            sizes["keyframes"] += len(whole)
        else:
            depth += 1
        if document is None:
            skeletons.append(form)
            frames.append((None, keyframe, whole, []))
            continue
        found, seen = [], {}
        shape = refer(document, found)
        references = []
        for value in found:
            text = canonical(value)
            key = (json.dumps(value[args.id]), text)
            if key not in numbers:
                numbers[key] = len(numbers)
                if i != keyframe:
                    pending.append((key[0], text, numbers[key]))
            number = numbers[key]
            seen.setdefault(key[0], set()).add(text)
            if text not in last.get(key[0], ()):
                # A new version of the item: not one the version before had under its id (a
                # version the window's keyframe holds is indexed where it came, not again in
                # each window; objects elsewhere in the document may share an item's id).
                index.setdefault(key[0], []).append((i, number, times[i]))
                rows.setdefault(key[0], []).append(text)
            references.append(number)
        last = seen
        skeleton = canonical(fill(shape, iter(references)))
        skeletons.append(skeleton)
        if i == keyframe:
            frame = compressed(skeleton, 11)
            sizes["keyframes"] += len(frame)
        else:
            frame = compressed(skeleton, 9 if len(skeleton) >= 64 << 10 else 3, skeletons[i - 1])
            sizes["skeletons"] += len(frame)
        frames.append((frame, keyframe, whole, references))
    close_window()
    # The blocks each version's read needs, up to where: its objects its keyframe does not hold.
    for i, (frame, keyframe, whole, references) in enumerate(frames):
        needed = {}
        for number in references:
            if (keyframe, number) in ends:
                block, end = ends[(keyframe, number)]
                needed[block] = max(needed.get(block, 0), end)
        frames[i] = (frame, keyframe, whole, needed)
    # What walking one item's history decodes: the windows and blocks its versions are in.
    walks = []
    for versions in index.values():
        windows = {frames[i][1] for i, _, _ in versions}
        held = {ends[(frames[i][1], number)][0] for i, number, _ in versions if (frames[i][1], number) in ends}
        walks.append((len(versions), len(windows), len(held)))
    sizes["index"] = index_size(index, 3)
    untimed = index_size(index, 2)
    # The keyframes as the store's anchors keep them: against the keyframe before, at level 19.
    starts = sorted({keyframe for _, keyframe, _, _ in frames})
    anchored = compress(forms[starts[0]], 19) + sum(
        min(compress(forms[k], 19, forms[before]), compress(forms[k], 19)) for before, k in zip(starts, starts[1:])
    )
    wholes = sum(len(whole) for i, (_, keyframe, whole, _) in enumerate(frames) if i == keyframe)

    # The reads, as the decompressions each runs: (frame, the step whose output is its prefix).
    reads = {"body": [], "chain": [], "item": [], "row": []}
    chain = chain_frames(forms)
    for i in range(len(forms)):
        frame, keyframe, whole, needed = frames[i]
        steps = [(whole, None)]
        if frame is not None and i != keyframe:
            steps.append((frames[keyframe][0], None))
            for j in range(keyframe + 1, i + 1):
                steps.append((frames[j][0], len(steps) - 1))
            steps += [(blocks[block][0], 0) for block in needed]
        reads["body"].append(steps)
        reads["chain"].append(chain_steps(chain, i))
    reads["item"] = [[(frames[keyframe][2], None), (frame, 0)] for frame, keyframe in blocks]
    block = b""
    for texts in rows.values():
        for r in range(0, len(texts), 32):
            block += b"".join(texts[r : r + 32])
            if len(block) >= block_limit:
                reads["row"].append([(compressed(block, 15), None)])
                block = b""
    return sizes, untimed, (wholes, anchored), len(blocks), reads, walks


REFERENCE = object()


def index_size(index, width):
    """The item index: per item, the first `width` of (version, reference, time) of each of its
    versions as differences from the version before, in blocks of 64 KiB at level 15."""
    entries = bytearray()
    for versions in index.values():
        last = (0, 0, 0)
        for entry in versions:
            for x, y in zip(entry[:width], last):
                entries += varint(zigzag(x - y))
            last = entry
    return sum(compress(bytes(entries[o : o + (64 << 10)]), 15) for o in range(0, len(entries), 64 << 10))


def chain_steps(chain, i):
    """The decompressions that read version `i` of `chain_frames`' chain, from its keyframe."""
    path = []
    while chain[i][1] is not None:
        path.append(i)
        i = chain[i][1]
    steps, at = [(chain[i][0], None)], {i: 0}
    for j in reversed(path):
        at[j] = len(steps)
        steps.append((chain[j][0], at[chain[j][1]]))
    return steps


def produced(steps):
    """Runs a read's decompressions; the bytes they produce."""
    outputs = []
    for frame, prefix in steps:
        outputs.append(decompressed(frame, outputs[prefix] if prefix is not None else b""))
    return sum(map(len, outputs))


def dump(reads, path):
    """Writes the reads for `replay-reads` (little-endian): u32 frames, each u32 length and its
    bytes; then per kind (body, chain, item, row) u32 reads, each u32 steps, each u32 frame and
    i32 prefix step (-1: none)."""
    frames, numbers, out = [], {}, bytearray()
    for kind in ("body", "chain", "item", "row"):
        out += struct.pack("<I", len(reads[kind]))
        for steps in reads[kind]:
            out += struct.pack("<I", len(steps))
            for frame, prefix in steps:
                if frame not in numbers:
                    numbers[frame] = len(frames)
                    frames.append(frame)
                out += struct.pack("<Ii", numbers[frame], -1 if prefix is None else prefix)
    with open(path, "wb") as f:
        f.write(struct.pack("<I", len(frames)))
        for frame in frames:
            f.write(struct.pack("<I", len(frame)) + frame)
        f.write(out)


def refer(value, found):
    """`value` with every object that has the id key as REFERENCE, those objects in `found` in
    document order (``fill`` puts what stands for them back)."""
    if isinstance(value, list):
        return [refer(v, found) for v in value]
    if not isinstance(value, dict):
        return value
    if args.id in value:
        found.append(value)
        return REFERENCE
    return {k: refer(v, found) for k, v in value.items()}


def fill(shape, references):
    """`shape` with each REFERENCE ``refer`` left replaced by the next of `references`."""
    if isinstance(shape, list):
        return [fill(v, references) for v in shape]
    if isinstance(shape, dict):
        return {k: fill(v, references) for k, v in shape.items()}
    return next(references) if shape is REFERENCE else shape


def varint(x):
    out = bytearray()
    while x >= 0x80:
        out.append(x & 0x7F | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


def zigzag(x):
    return x << 1 if x >= 0 else (-x << 1) - 1


def read_versions(repo, path, count):
    listed = subprocess.run(["git", "-C", repo, "rev-list", "--reverse", "--timestamp", "HEAD", "--", path], capture_output=True, text=True, check=True)
    commits = [line.split() for line in listed.stdout.splitlines()[:count]]
    names = "".join(f"{c}:{path}\n" for _, c in commits).encode()
    out = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], input=names, capture_output=True, check=True).stdout
    versions, at = [], 0
    while at < len(out):
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        versions.append(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 2 + size
    return versions, [int(t) for t, _ in commits]


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("repo")
parser.add_argument("file")
parser.add_argument("--items", default="")
parser.add_argument("--id", default="id")
parser.add_argument("--versions", type=int, default=2500)
parser.add_argument("--shared-only", action="store_true", help="only the shared store of object versions")
parser.add_argument("--by-item", action="store_true", help="the shared layout's objects by item in each window, not in the order versions bring them")
parser.add_argument("--dump", help="write the shared layout's reads and the chains' to this file, for replay-reads")
args = parser.parse_args()
versions, times = read_versions(args.repo, args.file, args.versions)
mb = lambda n: f"{n / 1e6:.2f} MB"
print(f"{args.file}: {len(versions)} versions, {mb(sum(map(len, versions)))}")


def report_shared(forms):
    sizes, untimed, (wholes, anchored), count, reads, walks = shared(forms, times)
    print(
        f"shared: keyframes {mb(sizes['keyframes'])} + skeletons {mb(sizes['skeletons'])} + objects {mb(sizes['objects'])}"
        f" ({count} blocks) + item index {mb(sizes['index'])} ({mb(untimed)} without the times) = {mb(sum(sizes.values()))}"
    )
    print(f"  the keyframes' whole versions {mb(wholes)}; against the keyframe before at level 19, as the store's anchors: {mb(anchored)}")
    kb = lambda kind, q: f"{sorted(map(produced, reads[kind]))[int(q * (len(reads[kind]) - 1))] / 1e3:,.0f}"
    print(f"  decompressed by a body read, p50 / p99: {kb('body', 0.5)} / {kb('body', 0.99)} KB (from the minified chains: {kb('chain', 0.5)} / {kb('chain', 0.99)} KB)")
    median = lambda values: sorted(values)[len(values) // 2]
    versions, windows, held = (median([w[k] for w in walks]) for k in range(3))
    rows = median([-(-w[0] // 32) for w in walks])
    print(f"  an item's history (median): {versions} versions in {windows} windows and {held} blocks (in rows of 32 now: {rows} rows)")
    if args.dump:
        dump(reads, args.dump)
        print(f"  the reads are in {args.dump}: time them with replay-reads")


if args.shared_only:
    report_shared([minified(v) for v in versions])
    raise SystemExit
print(f"chains (the store's body rows, no anchors): {mb(chains(versions))}")
forms = [minified(v) for v in versions]
laid = sum(f is not v for f, v in zip(forms, versions))
print(f"minified ({laid} of {len(versions)} versions laid out): {mb(chains(forms))}")
print(f"blocks of 16, keyframes at 19: {mb(blocks(versions))}")
skeletons, items, floor, count, wholes = skeleton(versions, args.items)
print(f"canonical versions in chains: {mb(wholes)}")
print(f"skeleton: {mb(skeletons)} in chains + {count} item versions {mb(items)} (zstd -19 of them together: {mb(floor)}) = {mb(skeletons + items)}")
report_shared(forms)
