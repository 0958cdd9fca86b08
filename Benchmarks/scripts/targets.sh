#!/usr/bin/env bash
# Issue 29's rows that package-benchmark does not measure, each RUNS times, as one markdown table on
# stdout (measure, target, median, every run, whether the median holds); progress on stderr.
# `make bench` runs it after the package benchmarks and writes the table into docs/benchmarks.md.
#
# usage: Benchmarks/scripts/targets.sh STRATA FIXTURE_SERVER [RUNS=5] [HISTORY_RUNS=RUNS]
#
# Run from the repository root. STRATA is the binary measured (`make release`'s); FIXTURE_SERVER
# a release build of strata-fixture-server. HISTORY_RUNS=0 leaves out the four git-scraping
# history rows (history-size.sh: about 20 minutes, most of it git-history, the peer). Needs perf
# and gcc (the client-CPU row), bc, python3 and, for the history rows, python3-venv. EVENTS (default
# 1000000) sizes the rebuild and as-of logs: smaller only to try the script out.
set -euo pipefail
events=${EVENTS:-1000000}
strata=$(realpath "$1"); server=$(realpath "$2"); runs=${3:-5}; history_runs=${4:-$runs}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { echo "== targets: $*" >&2; }
json() { python3 -c "import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$1"; }
# The whole command's wall time in µs.
wall() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Each row's values, one per line, in $work/ROW; a command that printed nothing stops its section.
record() { [ -n "$2" ] || { say "no value for $1"; return 1; }; echo "$2" >> "$work/$1"; }

engine() {
  for i in $(seq "$runs"); do
    say "run $i of $runs: rebuild of $events events"
    record rebuild "$("$strata" bench rebuild --events "$events" --durability nosync --format json | json seconds)"
    say "run $i of $runs: as-of reads on $events events"
    record asof "$("$strata" bench asof --events "$events" --payload-bytes 4096 --bodies text --no-growth --durability nosync --format json | json p99Micros)"
  done
}

lists() {
  say "the list rows: a source of 200,000 items against one of 1,000"
  python3 - "$work" <<'PY'
import json, sys
makes = ["Kia", "Ford", "Fiat", "Opel", "Seat", "Audi", "Mazda", "Honda", "Volvo", "Skoda",
         "Tesla", "Dacia", "Jeep", "Mini", "Smart", "Lexus", "Saab", "Lada", "Cupra", "Alpine"]
for n in (1_000, 200_000):
    with open(f"{sys.argv[1]}/items{n}.json", "w") as f:
        json.dump({"results": [{"id": i, "make": makes[(i * 7) % 20], "model": f"m{(i * 13) % 97}",
                                "price": 1000 + (i * 7919) % 50000} for i in range(1, n + 1)]}, f)
PY
  for n in 1000 200000; do
    "$strata" --store "$work/list$n" source add big --url https://api.example.invalid/x --items results --index make,price >/dev/null
    "$strata" --store "$work/list$n" import big "$work/items$n.json" >/dev/null
  done
  for i in $(seq "$runs"); do
    for q in limit where sort; do
      case $q in
        limit) args=(list big --limit 10) ;;
        where) args=(list big --where make=Kia --limit 10) ;;
        sort) args=(list big --sort price --limit 10) ;;
      esac
      : > "$work/big"; : > "$work/small"
      for _ in $(seq 9); do
        wall "$strata" --store "$work/list200000" "${args[@]}" >> "$work/big"
        wall "$strata" --store "$work/list1000" "${args[@]}" >> "$work/small"
      done
      record "list-$q" "$(echo "$(median < "$work/big") / $(median < "$work/small")" | bc -l)"
    done
    say "run $i of $runs: the list rows"
  done
}

start() {
  say "process start (start-ratio.sh, 21 alternated runs each)"
  for _ in $(seq "$runs"); do
    record start "$("$here/start-ratio.sh" "$strata" 21 | awk -F'|' '{ gsub(/[ ×]/, "", $5); print $5 }')"
  done
}

refetch() {
  say "an unchanged re-fetch of a 201-page list (refetch-ratio.py)"
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$server" --root . --port "$port" > "$work/server.log" 2>&1 & pid=$!
  trap 'kill "$pid" 2>/dev/null || true' EXIT
  for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
  for _ in $(seq "$runs"); do
    record refetch "$(python3 "$here/refetch-ratio.py" "$strata" "$port" | sed -n 's/.*ratio \([0-9.]*\);.*/\1/p')"
  done
}

budget() {
  say "client CPU per 4 KB detail (fetch-budget.sh 2000 $runs)"
  STRATA="$strata" SERVER="$server" "$here/fetch-budget.sh" 2000 "$runs" > "$work/budget"
  # Lines "client n cpu_ms server_cpu_ms", per run: floor 10, strata 10, floor N, strata N.
  awk 'NR > 1 && $1 != "" { cpu[$1, $2] = $3; if ($1 == "strata" && $2 != 10) {
         f = (cpu["floor", $2] - cpu["floor", 10]) / ($2 - 10); s = (cpu["strata", $2] - cpu["strata", 10]) / ($2 - 10)
         print s / f } }' "$work/budget" > "$work/client-cpu"
}

scraping() {
  [ "$history_runs" -gt 0 ] || return 0
  say "the git-scraping history (history-size.sh, $history_runs runs; git-history takes about ten minutes)"
  "$here/history-size.sh" "$strata" "$history_runs" > "$work/history"
  # Columns: run, store, vs pack, vs db, compacted, vs pack, vs db, import s, speed-up, p50, p99.
  awk -F'|' 'NR > 2 { for (c = 2; c <= NF; c++) gsub(/[ ×Bµsfaster]/, "", $c)
                      print $7 > W "/history-pack"; print $8 > W "/history-db"; print $10 > W "/history-import"; print $12 > W "/history-p99" }' \
      W="$work" "$work/history"
}

# Each section in a subshell of its own (errexit holds there): one that fails leaves its rows out
# of the table, marked, and the others still run.
for section in engine lists start refetch budget scraping; do
  ( "$section" ) & wait $! || say "$section failed (above): its rows are marked not measured"
done

# measure | target | median | every run | holds?  (op: le or ge against the limit)
row() {
  local file=$1 label=$2 target=$3 op=$4 limit=$5 unit=$6 m all holds
  [ -s "$work/$file" ] || { [ "$file" != "${file#history}" ] && [ "$history_runs" -eq 0 ] && return 0
                             printf "| %s | %s | not measured (see the run's output) | — | — |\n" "$label" "$target"; return 0; }
  m=$(median < "$work/$file")
  all=$(awk -v u="$unit" '{ printf "%s%.2f%s", (NR > 1 ? ", " : ""), $1, u }' "$work/$file")
  holds=$(awk -v m="$m" -v l="$limit" -v op="$op" 'BEGIN { print ((op == "le" ? m <= l : m >= l) ? "yes" : "**no**") }')
  printf "| %s | %s | **%.2f%s** | %s | %s |\n" "$label" "$target" "$m" "$unit" "$all" "$holds"
}
echo "| measure | target | median | runs | median holds? |"
echo "|---|---|---|---|---|"
row history-pack "store size of the scraping history (2,500 versions, compacted) vs \`git gc --aggressive\`" "≤ 1.0×" le 1.0 "×"
row history-db "the same vs git-history's SQLite database" "≤ 0.5×" le 0.5 "×"
row history-import "\`strata import --git\` vs \`git-history file\` (times faster)" "≥ 5×" ge 5 "×"
row history-p99 "reading any body version of that history, p99" "< 2,000 µs" le 2000 " µs"
row asof "as-of read of one item, $(python3 -c "print(f'{$events:,}')")-event log, deltas on, p99" "< 100 µs" le 100 " µs"
row rebuild "rebuild of $(python3 -c "print(f'{$events:,}')") events (\`--durability nosync\`)" "< 5 s" le 5 " s"
row client-cpu "fetch: Strata's client CPU per 4 KB detail vs the C floor's client" "≤ 2.0×" le 2.0 "×"
row list-limit "\`list NAME --limit 10\`, 200,000 items vs 1,000" "≤ 1.2×" le 1.2 "×"
row list-where "\`list NAME --where make=Kia --limit 10\` (indexed), 200,000 vs 1,000" "≤ 1.2×" le 1.2 "×"
row list-sort "\`list NAME --sort price --limit 10\` (indexed), 200,000 vs 1,000" "≤ 1.2×" le 1.2 "×"
row refetch "unchanged re-fetch of a 201-page list vs its first fetch" "≤ 0.2×" le 0.2 "×"
row start "process start: \`list NAME --limit 10\` vs a C program reading the same rows" "≤ 3×" le 3 "×"
