#!/usr/bin/env bash
# What a git-scraping history costs: Strata's store against git's packfile and git-history's
# SQLite database of the same history, import time against git-history, and body read latency.
#
# usage: history-size.sh STRATA [RUNS=5] [VERSIONS=2500]
#
# The history (scraping-history.py: a ~200 KB JSON list committed VERSIONS times, a few dozen
# items changing a few fields each time) is generated once. Per run: `strata import --git` into
# a new store (wall time, data.mdb bytes), `strata compact` of it (the bytes after; git's side is
# `git gc --aggressive`, which packs as well), `strata bench bodies` on it (every body version read
# in random order); once: `git gc --aggressive` (the .pack bytes) and git-history (pip, in a
# virtualenv under Benchmarks/.venv: `git-history file`, wall time and database bytes), which
# takes about ten minutes for 2,500 versions here.
set -euo pipefail
strata=$(realpath "$1"); runs=${2:-5}; versions=${3:-2500}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
venv="$here/../.venv"

echo "generating $versions versions" >&2
python3 "$here/scraping-history.py" "$work/repo" --versions "$versions"
git clone -q --bare "$work/repo" "$work/gc.git"
git -C "$work/gc.git" gc --aggressive -q
pack=$(stat -c %s "$work"/gc.git/objects/pack/*.pack)

if [ ! -x "$venv/bin/git-history" ]; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q git-history
fi
start=$(date +%s.%N)
"$venv/bin/git-history" file "$work/gh.db" items.json --repo "$work/repo" --id id >/dev/null
gh_seconds=$(echo "$(date +%s.%N) - $start" | bc)
gh_bytes=$(stat -c %s "$work/gh.db")

printf "| run | strata store | vs git pack (%s B) | vs git-history db (%s B) | compacted | vs git pack | vs git-history db | import s | vs git-history (%.1f s) | body read p50 | p99 |\n|---|---|---|---|---|---|---|---|---|---|---|\n" "$pack" "$gh_bytes" "$gh_seconds"
for i in $(seq "$runs"); do
  store="$work/store$i"
  "$strata" --store "$store" source add scraped --url https://example.invalid/items.json --id id >/dev/null
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
