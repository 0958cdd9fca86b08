#!/usr/bin/env bash
# `strata serve` beside nginx in the same run: one recorded detail of about 16 KB served to 64
# keep-alive connections by wrk (2 threads, DURATION seconds), alternating Strata and nginx RUNS
# times. nginx serves the same bytes from a file (sendfile, ETag on). Client and servers share
# this machine's cores, as they do for every row. The log holds EVENTS (1 M) other events between
# the detail's two recordings; the same request with an older point named (`/@SEQ/` prefix,
# `Accept-Datetime`) shows what choosing a point costs: CPU per request = cores ÷ req/s.
# Needs wrk and nginx (apt-get install -y wrk nginx) and release builds (the message says how).
# Usage (from the repository root): Benchmarks/scripts/serve-bench.sh [RUNS=5] [DURATION=10]
set -euo pipefail
RUNS=${1:-5}; DURATION=${2:-10}; BYTES=${BYTES:-16384}
P_FIX=${P_FIX:-18701}; P_STRATA=${P_STRATA:-18702}; P_NGINX=${P_NGINX:-18703}
BIN=.build/release
for t in wrk nginx python3; do command -v $t >/dev/null || { echo "needs $t: apt-get install -y wrk nginx" >&2; exit 1; }; done
[ -x $BIN/strata ] && [ -x $BIN/strata-fixture-server ] || {
  echo "build first: swift build -c release --product strata && swift build -c release --product strata-fixture-server" >&2; exit 1; }
work=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null || true; done; rm -rf "$work"' EXIT

. "$(dirname "$0")/lib.sh"

$BIN/strata-fixture-server --port $P_FIX >/dev/null 2>&1 & pids+=($!)
wait_port $P_FIX
export STRATA_STORE=$work/store STRATA_DURABILITY=nosync
$BIN/strata source add syn --url "http://127.0.0.1:$P_FIX/synthetic/items?n=8&bytes=$BYTES" --items results --title title \
  --detail-url-field url --page-param page --page-size 100 >/dev/null
$BIN/strata fetch syn --details >/dev/null
PATH_=/synthetic/items/3?bytes=$BYTES
SEQ=$($BIN/strata log --limit 1 --format ndjson | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["seq"])')
EVENTS=${EVENTS:-1000000}
$BIN/strata _append-loop --count $EVENTS --batch 10000 --keys 1000 >/dev/null
kill -USR1 ${pids[0]}; sleep 0.3                # the API's next version: the detail changes
$BIN/strata fetch syn --details >/dev/null
HEAD=$($BIN/strata log --limit 1 --format ndjson | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["seq"])')

$BIN/strata serve --port $P_STRATA >/dev/null 2>&1 & pids+=($!)
wait_port $P_STRATA
mkdir -p "$work/www/synthetic/items"
python3 - "$P_STRATA" "$PATH_" "$work/www/synthetic/items/3" <<'PY'
import sys, urllib.request
r = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}{sys.argv[2]}")
open(sys.argv[3], "wb").write(r.read())
PY
SIZE=$(stat -c %s "$work/www/synthetic/items/3")
DATE=$(python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$P_STRATA/@$SEQ$PATH_').headers['Memento-Datetime'])")
nginx_conf "$work" $P_NGINX
nginx -c "$work/nginx.conf" & pids+=($!)
wait_port $P_NGINX

# wrk's requests/s and p99 (ms) for one URL and optional header.
measure() {
  local url=$1 header=${2:-}
  local out
  if [ -n "$header" ]; then out=$(wrk -t2 -c64 -d${DURATION}s --latency -H "$header" "$url"); else out=$(wrk -t2 -c64 -d${DURATION}s --latency "$url"); fi
  local rps p99
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p99=$(echo "$out" | awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; print v}')
  echo "$rps $p99"
}

echo "serving a ${SIZE}-byte recorded detail from a log of $HEAD events (the older recording at seq $SEQ): $RUNS runs of ${DURATION}s, 64 connections, 2 wrk threads, $(nproc) cores"
printf "| run | nginx req/s | nginx p99 ms | strata req/s | strata p99 ms | strata ÷ nginx | /@SEQ/ req/s | Accept-Datetime req/s | µs added by /@SEQ/ | by Accept-Datetime |\n|---|---|---|---|---|---|---|---|---|---|\n"
for i in $(seq $RUNS); do
  read -r n_rps n_p99 < <(measure "http://127.0.0.1:$P_NGINX$PATH_")
  read -r s_rps s_p99 < <(measure "http://127.0.0.1:$P_STRATA$PATH_")
  read -r a_rps _ < <(measure "http://127.0.0.1:$P_STRATA/@$SEQ$PATH_")
  read -r d_rps _ < <(measure "http://127.0.0.1:$P_STRATA$PATH_" "Accept-Datetime: $DATE")
  read -r ratio added_a added_d < <(python3 -c "c=$(nproc); print(f'{$s_rps / $n_rps:.2f} {c*1e6/$a_rps - c*1e6/$s_rps:.1f} {c*1e6/$d_rps - c*1e6/$s_rps:.1f}')")
  echo "| $i | $n_rps | $n_p99 | $s_rps | $s_p99 | $ratio | $a_rps | $d_rps | $added_a | $added_d |"
done
