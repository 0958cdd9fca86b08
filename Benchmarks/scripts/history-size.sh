#!/usr/bin/env bash
# What a git-scraping history costs: Strata's store against git's packfile and git-history's
# SQLite database of the same history, import time against git-history, and body read latency.
#
# usage: history-size.sh STRATA [RUNS=5] [VERSIONS=2500] [SHAPE=items]
#        HISTORY_REPO=PATH HISTORY_FILE=F HISTORY_ID=KEY [HISTORY_ITEMS=KEY] history-size.sh STRATA [RUNS] [VERSIONS]
#        (a real scraping repository instead of a generated one: the first VERSIONS commits of its
#        file F, items at the top or under KEY, identified by HISTORY_ID)
#
# The history (scraping-history.py --shape SHAPE: `items`, a ~200 KB JSON list of 650 items, a
# few dozen changing a few fields each time; `pages`, a 100–300 KB object whose two dozen items
# with long HTML texts are a minority of the bytes beside side arrays that change wholesale now
# and then, keys reordered now and then, a few empty or invalid versions) is generated once. Per run: `strata import --git` into
# a new store (wall time, data.mdb bytes), `strata compact` of it (the bytes after; git's side is
# `git gc --aggressive`, which packs as well), `strata bench bodies` on it (every body version read
# in random order); once: `git gc --aggressive` (the .pack bytes) and git-history (pip, in a
# virtualenv under Benchmarks/.venv: `git-history file`, wall time and database bytes), which
# takes about ten minutes for 2,500 versions here. Then what the data allows (the floors): every
# version concatenated in commit order and compressed by `zstd -19 --long=27` and by `xz -9e`
# (HISTORY_XZ=0 skips xz: about ten minutes for 800 MB), and the distinct item versions alone
# (canonical JSON, in order of first sight) by `zstd -19 --long=27`; and where the last run's store
# goes, by part, as imported and compacted (mdb_stat's pages of each table, 4 KiB each).
set -euo pipefail
strata=$(realpath "$1"); runs=${2:-5}; versions=${3:-2500}; shape=${4:-items}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
venv="$here/../.venv"
. "$here/lib.sh"

file=items.json; id=id; items_key=
if [ -n "${HISTORY_REPO:-}" ]; then
  file=${HISTORY_FILE:?HISTORY_FILE names the file}; id=${HISTORY_ID:?HISTORY_ID names the items key}; items_key=${HISTORY_ITEMS:-}
  shape=$(basename "$(cd "$HISTORY_REPO" && git rev-parse --show-toplevel 2>/dev/null || echo "$HISTORY_REPO")")
  [ "$shape" = repo ] && shape=$(basename "$(dirname "$HISTORY_REPO")")
  versions=$(first_versions "$HISTORY_REPO" "$work/repo" "$file" "$versions")
  echo "$shape: the first $versions versions of $file" >&2
else
  echo "generating $versions versions ($shape)" >&2
  python3 "$here/scraping-history.py" "$work/repo" --versions "$versions" --shape "$shape"
  [ "$shape" = pages ] && items_key=items
fi
if [ -n "$items_key" ]; then
  items=(--items "$items_key")
  convert=(--convert "$(items_under "$items_key")")
else
  items=(); convert=()
fi
# Only what the history's commits reach (--no-local: a local clone would hard-link every object
# of WORK/repo, whose full history a real repository's clone still holds).
git clone -q --bare --no-local "$work/repo" "$work/gc.git"
git -C "$work/gc.git" gc --aggressive -q
pack=$(stat -c %s "$work"/gc.git/objects/pack/*.pack)

if [ ! -x "$venv/bin/git-history" ]; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q git-history
fi
start=$(date +%s.%N)
"$venv/bin/git-history" file "$work/gh.db" "$file" --repo "$work/repo" --id "$id" "${convert[@]}" >/dev/null
gh_seconds=$(echo "$(date +%s.%N) - $start" | bc)
gh_bytes=$(stat -c %s "$work/gh.db")

# parts STORE: "part bytes" lines, from mdb_stat's pages of every table.
parts() {
  mdb_stat -a "$1" | awk '
    /^Status of/ { name = $3 }
    /Branch pages:|Leaf pages:|Overflow pages:/ { pages[name] += $3 }
    END {
      for (n in pages) {
        p = "other projections"
        if (n == "bodies" || n == "bodies.chunks" || n == "body-index" || n == "blobs" || n == "lineage") p = "bodies"
        else if (n == "events") p = "envelopes"
        else if (n == "ids" || n == "by-stream" || n == "by-type" || n == "by-time") p = "log indexes"
        else if (n ~ /^p\/items\/(history|history-packed|history\.chunks)$/ || n ~ /^p\/details\/(history|history-packed|history\.chunks)$/) p = "item history"
        else if (n ~ /^p\/items\// || n ~ /^p\/details\//) p = "items (now, order, change order, counts)"
        else if (n ~ /^p\/timeline\//) p = "timeline"
        else if (n ~ /^p\/schema\//) p = "schema"
        else if (n == "Main" || n == "meta" || n == "checkpoints") p = "meta"
        sum[p] += pages[n] * 4096
      }
      for (p in sum) print p "\t" sum[p]
    }'
  mdb_stat -f "$1" | awk '/Free pages:/ { print "free pages\t" $3 * 4096 }'
}

echo "workload: $shape, $versions versions" >&2
printf "| run | strata store | vs git pack (%s B) | vs git-history db (%s B) | compacted | vs git pack | vs git-history db | import s | vs git-history (%.1f s) | body read p50 | p99 |\n|---|---|---|---|---|---|---|---|---|---|---|\n" "$pack" "$gh_bytes" "$gh_seconds"
for i in $(seq "$runs"); do
  store="$work/store$i"
  "$strata" --store "$store" source add scraped --url "https://example.invalid/$file" --id "$id" "${items[@]}" >/dev/null
  start=$(date +%s.%N)
  "$strata" import scraped --store "$store" --git "$work/repo" --path "$file" >/dev/null
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  bytes=$(stat -c %s "$store/data.mdb")
  if [ "$i" = "$runs" ]; then parts_imported=$(parts "$store"); fi
  "$strata" --store "$store" compact >/dev/null
  compacted=$(stat -c %s "$store/data.mdb")
  if [ "$i" = "$runs" ]; then parts_compacted=$(parts "$store"); fi
  read p50 p99 < <("$strata" bench bodies --store "$store" --format json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["p50Micros"], r["p99Micros"])')
  printf "| %s | %s B | %.2f× | %.2f× | %s B | %.2f× | %.2f× | %.1f | %.1f× faster | %.0f µs | %.0f µs |\n" "$i" "$bytes" \
    "$(echo "$bytes / $pack" | bc -l)" "$(echo "$bytes / $gh_bytes" | bc -l)" \
    "$compacted" "$(echo "$compacted / $pack" | bc -l)" "$(echo "$compacted / $gh_bytes" | bc -l)" "$seconds" "$(echo "$gh_seconds / $seconds" | bc -l)" "$p50" "$p99"
  rm -rf "$store"
done

# The floors: what the history's own bytes allow. One read of every version from git: each one
# as it is into WORK/versions, each distinct item (canonical JSON, in order of first sight) into
# WORK/items.
git -C "$work/repo" rev-list --reverse HEAD -- "$file" | sed "s|\$|:$file|" | git -C "$work/repo" cat-file --batch |
  python3 -c '
import json, sys
key, versions, items = sys.argv[1], open(sys.argv[2], "wb"), open(sys.argv[3], "wb")
data = sys.stdin.buffer
seen = set()
while True:
    header = data.readline()
    if not header: break
    size = int(header.split()[2])
    body = data.read(size); data.read(1)
    versions.write(body)
    try:
        doc = json.loads(body)
    except ValueError:
        continue
    found = (doc.get(key, []) if key else doc) if isinstance(doc, dict) else doc
    for item in found if isinstance(found, list) else []:
        text = json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        if text not in seen:
            seen.add(text); items.write(text + b"\n")
' "$items_key" "$work/versions" "$work/items"
raw=$(stat -c %s "$work/versions")
zstd -q -19 --long=27 -T1 -c "$work/versions" > "$work/versions.zst"
floor_zstd=$(stat -c %s "$work/versions.zst")
if [ "${HISTORY_XZ:-1}" != 0 ]; then xz -9e -T1 -c "$work/versions" > "$work/versions.xz"; floor_xz=$(stat -c %s "$work/versions.xz"); else floor_xz=; fi
items_raw=$(stat -c %s "$work/items"); items_n=$(wc -l < "$work/items")
floor_items=$(zstd -q -19 --long=27 -T1 -c "$work/items" | wc -c)
echo
printf "floors (%s): the %s versions, %s B: zstd -19 --long=27 %s B (%.2f× the git pack, %s B)" "$shape" "$versions" "$raw" "$floor_zstd" "$(echo "$floor_zstd / $pack" | bc -l)" "$pack"
if [ -n "$floor_xz" ]; then printf ", xz -9e %s B (%.2f×)" "$floor_xz" "$(echo "$floor_xz / $pack" | bc -l)"; fi
printf "; the %s distinct item versions, %s B: zstd -19 --long=27 %s B\n" "$items_n" "$items_raw" "$floor_items"
echo
echo "| part ($shape, last run) | as imported | compacted |"
echo "|---|---|---|"
join -t $'\t' -a1 -a2 -e 0 -o 0,1.2,2.2 <(echo "$parts_imported" | sort) <(echo "$parts_compacted" | sort) |
  awk -F'\t' '{ printf "| %s | %.2f MB | %.2f MB |\n", $1, $2 / 1e6, $3 / 1e6 }'
