#!/usr/bin/env bash
# Team log push and pull against their floors (docs/benchmarks.md): starts a PostgreSQL 15 of its
# own (initdb in a temporary directory as the unprivileged `postgres` user, a unix socket, fsync
# on, no TCP), runs `strata-lab bench teamlog` RUNS times against a new database each, prints every
# run's ratios and their medians, and stops the server.
#
# usage: teamlog-bench.sh STRATA_LAB [RUNS=5] [EVENTS=20000]
set -euo pipefail
lab=$(realpath "$1"); runs=${2:-5}; events=${3:-20000}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
work=$(mktemp -d /tmp/strata-teamlog-bench.XXXXXX)
chown postgres:postgres "$work"
as_pg() { setpriv --reuid=postgres --regid=postgres --clear-groups "$@"; }
stop() { as_pg "$bin/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap stop EXIT
as_pg "$bin/initdb" -D "$work/data" -A trust -U strata >/dev/null
as_pg "$bin/pg_ctl" -D "$work/data" -l "$work/log" -w -o "-k $work -c listen_addresses=''" start >/dev/null
echo "| run | push events/s | push floor | push ratio | pull events/s | pull floor | pull ratio |"
echo "|---|---|---|---|---|---|---|"
: > "$work/push"; : > "$work/pull"
for i in $(seq "$runs"); do
  as_pg "$bin/createdb" -h "$work" -U strata "bench$i"
  "$lab" bench teamlog --events "$events" --batch 1000 --objects 2000 \
    --pg-url "postgres://strata@/bench$i?host=$work" --format json > "$work/run.json"
  python3 - "$work/run.json" "$i" "$work/push" "$work/pull" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"| {sys.argv[2]} | {r['pushEventsPerSecond']:,} | {r['pushFloorEventsPerSecond']:,} | {r['pushRatio']:.2f} "
      f"| {r['pullEventsPerSecond']:,} | {r['pullFloorEventsPerSecond']:,} | {r['pullRatio']:.2f} |")
open(sys.argv[3], "a").write(f"{r['pushRatio']}\n"); open(sys.argv[4], "a").write(f"{r['pullRatio']}\n")
PY
done
python3 - "$work/push" "$work/pull" <<'PY'
import statistics, sys
push = [float(x) for x in open(sys.argv[1])]; pull = [float(x) for x in open(sys.argv[2])]
print(f"\nmedians of {len(push)} runs: push {statistics.median(push):.2f} (range {min(push):.2f}–{max(push):.2f}; target ≥ 0.7), "
      f"pull {statistics.median(pull):.2f} (range {min(pull):.2f}–{max(pull):.2f}; target ≥ 0.7)")
PY
