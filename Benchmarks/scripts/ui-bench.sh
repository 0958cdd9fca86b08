#!/usr/bin/env bash
# The web UI's speed (docs/benchmarks.md): `strata serve` (the release build) on generated
# stores, each page asked RUNS times in a row by curl on one connection each; the figures are the
# server's answer times as curl saw them (`time_total`: loopback, no process start), p50 and p99.
#   items    a source of N items (make among 12, price 1,000–60,000, `--index make,price`), N =
#            1,000 and 200,000: the first page, sorted by price, filtered (`make = "Kia"`, the
#            index), filtered by a range (`price < 5000`); the facets are on every page
#   item     one item of a source whose single item changed 1,000 times (1,000 versions)
#   changes  the changes page of the 200,000 items after four more snapshots (1% of the prices
#            move in each), of the 1,000-version item's source, and of a source of 100,000 events
#            (50 items, one changing in each snapshot): all of them, a tenth, and from the middle
# and the weight of a page with its stylesheet and script.
#
# usage: ui-bench.sh STRATA [RUNS=200]
set -euo pipefail
strata=$(realpath "$1"); runs=${2:-200}
work=$(mktemp -d /tmp/strata-ui-bench.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null || true; done; rm -rf "$work"' EXIT
gen() {  # gen N FILE SEED: a snapshot of N items, 1% of the prices moved by SEED
  python3 - "$1" "$2" "$3" <<'PY'
import json, random, sys
n, path, seed = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
r = random.Random(1)
makes = ["Toyota","Kia","Ford","Renault","Volkswagen","Skoda","Fiat","Opel","Peugeot","Seat","Mazda","Honda"]
items = [{"id": i, "make": r.choice(makes), "model": "m%d" % i, "price": r.randrange(1000, 60000), "fuel": r.choice(["petrol","diesel","hybrid","ev"])} for i in range(1, n + 1)]
m = random.Random(seed)
for it in items:
    if seed and m.random() < 0.01: it["price"] += seed * m.choice([-500, -100, 100, 700])
json.dump(items, open(path, "w"))
PY
}
serve() {  # serve STORE PORT: start `strata serve` and wait until it answers
  STRATA_STORE=$1 "$strata" serve --port $2 >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:$2/_strata/ui/assets/strata.css && return; sleep 0.1; done
  echo "serve on $2 did not start" >&2; exit 1
}
times() {  # times URL: p50 and p99 of RUNS answers, in ms
  for _ in $(seq $runs); do curl -s -o /dev/null -w '%{time_total}\n' "$1"; done | sort -n |
    awk '{a[NR]=$1} END {printf "%.1f ms | %.1f ms", a[int(NR*0.5)]*1000, a[int(NR*0.99)]*1000}'
}
for n in 1000 200000; do
  export STRATA_STORE=$work/store-$n
  gen $n $work/snap.json 0
  "$strata" source add cars --url "file://$work/snap.json" --id id --title model --subtitle make --index make,price >/dev/null
  "$strata" import cars $work/snap.json --recorded-at 2026-01-01T00:00:00Z >/dev/null
done
export STRATA_STORE=$work/store-200000
for v in 1 2 3 4; do
  gen 200000 $work/snap.json $v
  "$strata" import cars $work/snap.json --recorded-at 2026-01-0$((v + 1))T00:00:00Z >/dev/null
done
# One item, 1,000 versions.
export STRATA_STORE=$work/store-one
"$strata" source add one --url "file://$work/one.json" --id id --title name >/dev/null
python3 - "$work" <<'PY'
import json, sys
for v in range(1000):
    json.dump([{"id": 1, "name": "the one", "price": 1000 + (v * 37) % 500, "stock": v % 7, "note": "version %d of the one item" % v}], open("%s/one-%04d.json" % (sys.argv[1], v), "w"))
PY
"$strata" import one $work/one-*.json >/dev/null
# A source of 100,000 events: 50 items, one of which changes in each snapshot (its price moves up
# or, one time in ten, down), imported 5,000 snapshots per command.
export STRATA_STORE=$work/store-events
"$strata" source add ticks --url "file://$work/ticks.json" --id id --title name >/dev/null
mkdir -p $work/ticks
python3 - "$work/ticks" <<'PY'
import json, random, sys
r = random.Random(5)
items = [{"id": i, "name": "item %d" % i, "price": 1000} for i in range(50)]
for v in range(100000):
    it = items[v % 50]
    it["price"] += -7 if r.random() < 0.1 else 3
    json.dump(items, open("%s/%06d.json" % (sys.argv[1], v), "w"))
PY
(cd $work/ticks && ls | sort | xargs -n 5000 "$strata" import ticks >/dev/null)
rm -rf $work/ticks
serve $work/store-1000 18181
serve $work/store-200000 18182
serve $work/store-one 18183
serve $work/store-events 18184
echo "| page | 1,000 items p50 | p99 | 200,000 items p50 | p99 |"
echo "|---|---|---|---|---|"
for page in "first page|/_strata/ui/sources/cars" "sorted by price|/_strata/ui/sources/cars?sort=-price" \
            "filtered: make = \"Kia\"|/_strata/ui/sources/cars?where=make+%3D+%22Kia%22" "range: price < 5000|/_strata/ui/sources/cars?where=price+%3C+5000"; do
  name=${page%%|*}; path=${page#*|}
  echo "| $name | $(times http://127.0.0.1:18181$path) | $(times http://127.0.0.1:18182$path) |"
done
echo
echo "| page | p50 | p99 |"
echo "|---|---|---|"
echo "| an item with 1,000 versions | $(times http://127.0.0.1:18183/_strata/ui/sources/one/items/1) |"
echo "| its source's changes (1,000 events, the first 200) | $(times http://127.0.0.1:18183/_strata/ui/sources/one/changes) |"
echo "| changes of the 200,000 items, \`price < old.price\` (the first 200) | $(times 'http://127.0.0.1:18182/_strata/ui/sources/cars/changes?when=price+%3C+old.price') |"
echo "| a source of 100,000 events: its changes (the first 200) | $(times http://127.0.0.1:18184/_strata/ui/sources/ticks/changes) |"
echo "| the same, \`price < old.price\` (one change in ten) | $(times 'http://127.0.0.1:18184/_strata/ui/sources/ticks/changes?when=price+%3C+old.price') |"
echo "| the same, from seq 50,000 | $(times 'http://127.0.0.1:18184/_strata/ui/sources/ticks/changes?from=50000') |"
page=$(curl -s http://127.0.0.1:18182/_strata/ui/sources/cars | wc -c)
css=$(curl -s http://127.0.0.1:18182/_strata/ui/assets/strata.css | wc -c)
js=$(curl -s http://127.0.0.1:18182/_strata/ui/assets/strata.js | wc -c)
item=$(curl -s http://127.0.0.1:18183/_strata/ui/sources/one/items/1 | wc -c)
echo
echo "weight: the items page $page bytes + stylesheet $css + script $js = $((page + css + js)) bytes; the 1,000-version item page $item bytes"
