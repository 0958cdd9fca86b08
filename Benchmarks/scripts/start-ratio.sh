#!/usr/bin/env bash
# Process start: `strata list NAME --limit 10` on a warm store of 1,000 items, against a C program
# that opens the same LMDB environment and reads the same 10 rows (start-floor.c); medians of
# RUNS runs of each whole command, alternated.
#
# usage: start-ratio.sh STRATA [RUNS=21]
set -euo pipefail
strata=$(realpath "$1"); runs=${2:-21}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/start-floor" "$here/start-floor.c" -llmdb
python3 -c 'import json; print(json.dumps({"results": [{"id": i, "make": ["Kia", "Ford", "Fiat"][i % 3], "price": 1000 + i} for i in range(1, 1001)]}))' > "$work/items.json"
"$strata" --store "$work/store" source add big --url https://api.example.invalid/x --items results --index make >/dev/null
"$strata" --store "$work/store" import big "$work/items.json" >/dev/null
: > "$work/s"; : > "$work/c"
for i in $(seq "$runs"); do
  s=$(date +%s%N); "$strata" --store "$work/store" list big --limit 10 >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000 )) >> "$work/s"
  s=$(date +%s%N); "$work/start-floor" "$work/store" big >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000 )) >> "$work/c"
done
median() { sort -n "$1" | sed -n "$(( (runs + 1) / 2 ))p"; }
ms=$(median "$work/s"); mc=$(median "$work/c")
printf "| %s | %.1f ms | %.1f ms | %.1f× |\n" "$strata" "$(echo "$ms / 1000" | bc -l)" "$(echo "$mc / 1000" | bc -l)" "$(echo "$ms / $mc" | bc -l)"
