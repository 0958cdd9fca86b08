#!/usr/bin/env bash
# The expression language's speed (docs/benchmarks.md): a source of N items imported from a
# generated snapshot (make among 12, price 1,000–60,000, fuel among 4; `--index make,price`),
# then, RUNS times each, median wall time of the whole command (process start included):
#   range  `list --where 'price >= 20000 and price < 20100' --limit 20` (the sorted index)
#   facet  `count --by make` (the value index's counters)
#   scan   `count --where 'fuel = "ev" and price < 30000'` (no index answers it: every item read)
# at N = 1,000 and N = 200,000, and the ratio of the two: the index paths should not grow with N.
# Then `changes` over VERSIONS further snapshots of the large source (1% of prices move in each):
# the first change (--limit 1) and all of them (`changes --when 'price < old.price'`). And a
# scan: a source of 100,000 items whose every price moves in each of 9 more snapshots (1,000,000
# stored item versions), asked for the rare halvings (`changes --when 'price < old.price / 2'`),
# so reading the versions, not printing answers, is what is timed: versions read a second.
#
# usage: expression-bench.sh STRATA [RUNS=5] [VERSIONS=4]
set -euo pipefail
strata=$(realpath "$1"); runs=${2:-5}; versions=${3:-4}
work=$(mktemp -d /tmp/strata-expr-bench.XXXXXX); trap 'rm -rf "$work"' EXIT
gen() {  # gen N FILE SEED [SHARE]: a snapshot of N items, SHARE (0.01) of the prices moved
  python3 - "$1" "$2" "$3" "${4:-0.01}" <<'PY'
import json, random, sys
n, path, seed, share = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
r = random.Random(1)
makes = ["Toyota","Kia","Ford","Renault","Volkswagen","Skoda","Fiat","Opel","Peugeot","Seat","Mazda","Honda"]
items = [{"id": i, "make": r.choice(makes), "price": r.randrange(1000, 60000), "fuel": r.choice(["petrol","diesel","hybrid","ev"])} for i in range(1, n + 1)]
m = random.Random(seed)
for it in items:
    if seed and m.random() < share: it["price"] += seed * m.choice([-500, -100, 100, 700])
json.dump(items, open(path, "w"))
PY
}
ms() {  # ms CMD…: wall milliseconds of one run
  local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 ))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A result
for n in 1000 200000; do
  export STRATA_STORE=$work/store-$n
  gen $n $work/snap-$n-0.json 0
  "$strata" source add big --url "file://$work/snap.json" --id id --title make --index make,price >/dev/null
  "$strata" import big $work/snap-$n-0.json --recorded-at 2026-01-01T00:00:00Z >/dev/null
  result[range-$n]=$(for i in $(seq $runs); do ms "$strata" list big --where 'price >= 20000 and price < 20100' --limit 20 --format json; done | median)
  result[facet-$n]=$(for i in $(seq $runs); do ms "$strata" count big --by make --format json; done | median)
  result[scan-$n]=$(for i in $(seq $runs); do ms "$strata" count big --where 'fuel = "ev" and price < 30000' --format json; done | median)
done
echo "| question | 1,000 items | 200,000 items | ratio |"
echo "|---|---|---|---|"
for q in range facet scan; do
  a=${result[$q-1000]}; b=${result[$q-200000]}
  echo "| $q | $a ms | $b ms | $(python3 -c "print(f'{$b/max($a,1):.2f}')")× |"
done
export STRATA_STORE=$work/store-200000
for v in $(seq $versions); do
  gen 200000 $work/snap-v$v.json $v
  "$strata" import big $work/snap-v$v.json --recorded-at 2026-01-0$((v + 1))T00:00:00Z >/dev/null
done
first=$(for i in $(seq $runs); do ms "$strata" changes big --when 'price < old.price' --limit 1 --format json; done | median)
t0=$(date +%s%N); count=$("$strata" changes big --when 'price < old.price' --format ndjson | wc -l); t1=$(date +%s%N)
all=$(( (t1 - t0) / 1000000 ))
versions_total=$(( 200000 * (versions + 1) ))
stored=$(( 200000 + $("$strata" changes big --kind changed --format ndjson | wc -l) ))
echo
echo "changes over $versions_total item observations ($stored stored versions): first line $first ms; all $count price drops in $all ms"
# The scan: every price moves in every snapshot.
export STRATA_STORE=$work/store-every
"$strata" source add every --url "file://$work/snap.json" --id id --title make >/dev/null
for v in $(seq 0 9); do
  gen 100000 $work/every-$v.json $v 1.0
  "$strata" import every $work/every-$v.json --recorded-at 2026-02-$(printf %02d $((v + 1)))T00:00:00Z >/dev/null
done
rm -f $work/every-*.json
scan=$(for i in $(seq $runs); do ms "$strata" changes every --when 'price < old.price / 2' --format ndjson; done | median)
halvings=$("$strata" changes every --when 'price < old.price / 2' --format ndjson | wc -l)
scan_first=$(for i in $(seq $runs); do ms "$strata" changes every --when 'price < old.price' --limit 1 --format ndjson; done | median)
echo "scan of 1,000,000 stored versions (100,000 items x 10): $halvings halvings in $scan ms ($(python3 -c "print(f'{1000000/max($scan,1)*1000:,.0f}')") versions/s); first drop after $scan_first ms"
