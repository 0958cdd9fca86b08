#!/usr/bin/env bash
# What a git-scraping history costs: Strata's store against git's packfile and git-history's
# SQLite database of the same history, import time against git-history, and body read latency.
#
# usage: history-size.sh STRATA [RUNS=5] [VERSIONS=2500] [SHAPE=items]
#
# The history (scraping-history.py --shape SHAPE: `items`, a ~200 KB JSON list of 650 items, a
# few dozen changing a few fields each time; `pages`, a 100–300 KB object whose two dozen items
# with long HTML texts are a minority of the bytes beside side arrays that change wholesale now
# and then, keys reordered now and then, a few empty or invalid versions) is generated once. Per run: `strata import --git` into
# a new store (wall time, data.mdb bytes), `strata compact` of it (the bytes after; git's side is
# `git gc --aggressive`, which packs as well), `strata bench bodies` on it (every body version read
# in random order); once: `git gc --aggressive` (the .pack bytes) and git-history (pip, in a
# virtualenv under Benchmarks/.venv: `git-history file`, wall time and database bytes), which
# takes about ten minutes for 2,500 versions here.
set -euo pipefail
strata=$(realpath "$1"); runs=${2:-5}; versions=${3:-2500}; shape=${4:-items}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
venv="$here/../.venv"

echo "generating $versions versions ($shape)" >&2
python3 "$here/scraping-history.py" "$work/repo" --versions "$versions" --shape "$shape"
if [ "$shape" = pages ]; then
  items=(--items items)
  # git-history aborts on a version that is not JSON; an invalid one is read as no items.
  convert=(--convert $'try:\n    return json.loads(content)["items"]\nexcept ValueError:\n    return []')
else
  items=(); convert=()
fi
git clone -q --bare "$work/repo" "$work/gc.git"
git -C "$work/gc.git" gc --aggressive -q
pack=$(stat -c %s "$work"/gc.git/objects/pack/*.pack)

if [ ! -x "$venv/bin/git-history" ]; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q git-history
fi
start=$(date +%s.%N)
"$venv/bin/git-history" file "$work/gh.db" items.json --repo "$work/repo" --id id "${convert[@]}" >/dev/null
gh_seconds=$(echo "$(date +%s.%N) - $start" | bc)
gh_bytes=$(stat -c %s "$work/gh.db")

echo "workload: $shape, $versions versions" >&2
printf "| run | strata store | vs git pack (%s B) | vs git-history db (%s B) | compacted | vs git pack | vs git-history db | import s | vs git-history (%.1f s) | body read p50 | p99 |\n|---|---|---|---|---|---|---|---|---|---|---|\n" "$pack" "$gh_bytes" "$gh_seconds"
for i in $(seq "$runs"); do
  store="$work/store$i"
  "$strata" --store "$store" source add scraped --url https://example.invalid/items.json --id id "${items[@]}" >/dev/null
  start=$(date +%s.%N)
  "$strata" import scraped --store "$store" --git "$work/repo" --path items.json >/dev/null
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  bytes=$(stat -c %s "$store/data.mdb")
  "$strata" --store "$store" compact >/dev/null
  compacted=$(stat -c %s "$store/data.mdb")
  read p50 p99 < <("$strata" bench bodies --store "$store" --format json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["p50Micros"], r["p99Micros"])')
  printf "| %s | %s B | %.2f× | %.2f× | %s B | %.2f× | %.2f× | %.1f | %.1f× faster | %.0f µs | %.0f µs |\n" "$i" "$bytes" \
    "$(echo "$bytes / $pack" | bc -l)" "$(echo "$bytes / $gh_bytes" | bc -l)" \
    "$compacted" "$(echo "$compacted / $pack" | bc -l)" "$(echo "$compacted / $gh_bytes" | bc -l)" "$seconds" "$(echo "$gh_seconds / $seconds" | bc -l)" "$p50" "$p99"
  rm -rf "$store"
done
