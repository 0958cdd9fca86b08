#!/usr/bin/env python3
"""What a body layout with a bounded read can store a scraping history in (docs/benchmarks.md).

usage: layout-bounds.py REPO FILE [--items KEY] [--versions N]

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

Needs the `zstandard` package (Benchmarks/.venv: `make bench-layout` installs it).
"""

import argparse
import json
import re
import subprocess

import zstandard

CHAIN_BYTES = 20 << 20


def chain_length(size):
    return min(128, max(8, CHAIN_BYTES // max(size, 1)))


def compress(data, level, prefix=b""):
    window = max(17, min(27, (len(data) + len(prefix)).bit_length()))
    params = zstandard.ZstdCompressionParameters.from_level(level, window_log=window)
    dictionary = zstandard.ZstdCompressionDict(prefix, dict_type=zstandard.DICT_TYPE_RAWCONTENT) if prefix else None
    return len(zstandard.ZstdCompressor(compression_params=params, dict_data=dictionary).compress(data))


def chains(versions):
    """The store's chains: a keyframe, then deltas against the version before (or the one before that)."""
    total, depth = 0, 0
    for i, body in enumerate(versions):
        if i == 0 or depth + 1 >= chain_length(len(body)):
            total += compress(body, 11)
            depth = 0
            continue
        level = 9 if len(body) >= 64 << 10 else 3
        delta = compress(body, level, versions[i - 1])
        if delta >= 4096 and depth >= 1:
            delta = min(delta, compress(body, level, versions[i - 2]))
        total += delta
        depth += 1
    return total


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

    def refer(value):
        if isinstance(value, list):
            return [refer(v) for v in value]
        if not isinstance(value, dict):
            return value
        if args.id in value:
            text = canonical(value)
            key = (json.dumps(value[args.id]), text)
            if key not in numbers:
                numbers[key] = len(numbers)
                rows.setdefault(key[0], []).append(text)
            return numbers[key]
        return {k: refer(v) for k, v in value.items()}

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
        skeletons.append(canonical(refer(document)))
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


def read_versions(repo, path, count):
    commits = subprocess.run(["git", "-C", repo, "rev-list", "--reverse", "HEAD", "--", path], capture_output=True, text=True, check=True)
    names = "".join(f"{c}:{path}\n" for c in commits.stdout.split()[:count]).encode()
    out = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], input=names, capture_output=True, check=True).stdout
    versions, at = [], 0
    while at < len(out):
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        versions.append(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 2 + size
    return versions


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("repo")
parser.add_argument("file")
parser.add_argument("--items", default="")
parser.add_argument("--id", default="id")
parser.add_argument("--versions", type=int, default=2500)
args = parser.parse_args()
versions = read_versions(args.repo, args.file, args.versions)
mb = lambda n: f"{n / 1e6:.2f} MB"
print(f"{args.file}: {len(versions)} versions, {mb(sum(map(len, versions)))}")
print(f"chains (the store's body rows, no anchors): {mb(chains(versions))}")
forms = [minified(v) for v in versions]
laid = sum(f is not v for f, v in zip(forms, versions))
print(f"minified ({laid} of {len(versions)} versions laid out): {mb(chains(forms))}")
print(f"blocks of 16, keyframes at 19: {mb(blocks(versions))}")
skeletons, items, floor, count, wholes = skeleton(versions, args.items)
print(f"canonical versions in chains: {mb(wholes)}")
print(f"skeleton: {mb(skeletons)} in chains + {count} item versions {mb(items)} (zstd -19 of them together: {mb(floor)}) = {mb(skeletons + items)}")
