#!/usr/bin/env bash
# Recorded traffic, measured beside peers in the same run (2 cores shared by client and servers):
#  1. strata proxy's overhead: a ~16 KB answer of the fixture server (release build) fetched
#     directly and through `strata proxy` (which records every exchange): p50 latency with one
#     connection, requests/s with 64 (wrk -t2), RUNS runs each, alternating.
#  2. replay: one recorded ~16 KB answer served by `strata serve`, by mitmproxy's server replay
#     (mitmdump --server-replay of Strata's HAR export) and by pywb (Strata's WARC export, the
#     `id_` URL), with nginx serving the same bytes from a file as the limit; 64 connections.
#  3. import of a generated WARC of WARC_MB megabytes (plain, then gzip per record): MB/s of the
#     file and peak RSS (/usr/bin/time).
# Needs wrk, nginx, python3-venv (mitmproxy and pywb go in Benchmarks/.venv) and release builds.
# Usage (from the repository root): Benchmarks/scripts/traffic-bench.sh [RUNS=3] [DURATION=8] [WARC_MB=1024]
# (SECTIONS="proxy replay import" by default; name fewer to run fewer.)
set -euo pipefail
RUNS=${1:-3}; DURATION=${2:-8}; WARC_MB=${3:-1024}; SECTIONS=${SECTIONS:-proxy replay import}
section() { [[ " $SECTIONS " == *" $1 "* ]]; }
BIN=.build/release; VENV=$PWD/Benchmarks/.venv; BYTES=16384
P_FIX=18801; P_PROXY=18802; P_REC=18803; P_STRATA=18804; P_MITM=18805; P_PYWB=18806; P_NGINX=18807
for t in wrk nginx python3; do command -v $t >/dev/null || { echo "needs $t: apt-get install -y wrk nginx" >&2; exit 1; }; done
[ -x $BIN/strata ] && [ -x $BIN/strata-fixture-server ] || {
  echo "build first: swift build -c release --product strata && swift build -c release --product strata-fixture-server" >&2; exit 1; }
if [ ! -x "$VENV/bin/mitmdump" ] || [ ! -x "$VENV/bin/wayback" ]; then
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q "mitmproxy<12" pywb
fi
work=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null || true; done; sleep 0.5; rm -rf "$work"' EXIT
. "$(dirname "$0")/lib.sh"

# wrk's requests/s, p50 and p99 (ms) for a URL with C connections.
measure() {
  local url=$1 c=$2 out
  out=$(wrk -t$([ "$c" = 1 ] && echo 1 || echo 2) -c"$c" -d${DURATION}s --latency "$url")
  python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
def ms(v):
    m = re.match(r"([\d.]+)(us|ms|s)", v); x = float(m.group(1))
    return x / 1000 if m.group(2) == "us" else x * 1000 if m.group(2) == "s" else x
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
p50 = ms(re.search(r"\s50%\s+(\S+)", out).group(1)); p99 = ms(re.search(r"\s99%\s+(\S+)", out).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
print(f"{rps:.0f} {p50:.3f} {p99:.2f} {errors.group(1) if errors else 0}")
PY
}

$BIN/strata-fixture-server --port $P_FIX >/dev/null 2>&1 & pids+=($!)
wait_port $P_FIX
TARGET="/synthetic/items/3?bytes=$BYTES"
SIZE=$(curl -s "http://127.0.0.1:$P_FIX$TARGET" | wc -c)

# 1. The proxy.
if section proxy; then
STRATA_STORE=$work/proxy $BIN/strata proxy bench --upstream "http://127.0.0.1:$P_FIX" --port $P_PROXY >/dev/null 2>&1 & proxy=$!; pids+=($proxy)
wait_port $P_PROXY
echo "## strata proxy: a ${SIZE}-byte answer, directly and through strata proxy (recording), $RUNS runs of ${DURATION}s, $(nproc) cores"
echo
echo "| run | direct p50 ms (1 conn) | proxy p50 ms | added ms | direct req/s (64 conn) | proxy req/s | proxy ÷ direct |"
echo "|---|---|---|---|---|---|---|"
for i in $(seq $RUNS); do
  read -r _ d50 _ _ < <(measure "http://127.0.0.1:$P_FIX$TARGET" 1)
  read -r _ p50 _ _ < <(measure "http://127.0.0.1:$P_PROXY$TARGET" 1)
  read -r drps _ _ _ < <(measure "http://127.0.0.1:$P_FIX$TARGET" 64)
  read -r prps _ _ perr < <(measure "http://127.0.0.1:$P_PROXY$TARGET" 64)
  [ "$perr" = 0 ] || echo "warning: $perr non-2xx answers through the proxy" >&2
  python3 -c "print(f'| $i | $d50 | $p50 | {$p50 - $d50:.3f} | $drps | $prps | {$prps / $drps:.2f} |')"
done
kill -TERM $proxy; wait $proxy 2>/dev/null || true
echo
echo "recorded: $(STRATA_STORE=$work/proxy $BIN/strata log --type ExchangeRecorded --limit 1 --format ndjson | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["seq"])') events in the proxy's store (every exchange of the runs above)"
echo
fi

# 2. Replay: one recording, four servers.
if section replay; then
export STRATA_STORE=$work/replay
$BIN/strata proxy rec --upstream "http://127.0.0.1:$P_FIX" --port $P_REC >/dev/null 2>&1 & rec=$!; pids+=($rec)
wait_port $P_REC
curl -s -o /dev/null "http://127.0.0.1:$P_REC$TARGET"
kill -TERM $rec; wait $rec 2>/dev/null || true
$BIN/strata export rec --har $work/rec.har >/dev/null
$BIN/strata export rec --warc $work/rec.warc.gz >/dev/null
$BIN/strata serve --port $P_STRATA >/dev/null 2>&1 & pids+=($!)
"$VENV/bin/mitmdump" -q --mode "reverse:http://127.0.0.1:$P_FIX" -p $P_MITM --server-replay $work/rec.har \
  --set server_replay_reuse=true --set server_replay_extra=404 >/dev/null 2>&1 & pids+=($!)
mkdir -p $work/pywb && (cd $work/pywb && "$VENV/bin/wb-manager" init c >/dev/null 2>&1 && "$VENV/bin/wb-manager" add c $work/rec.warc.gz >/dev/null 2>&1)
(cd $work/pywb && exec "$VENV/bin/wayback" -p $P_PYWB >/dev/null 2>&1) & pids+=($!)
mkdir -p "$work/www/synthetic/items"; curl -s "http://127.0.0.1:$P_STRATA$TARGET" > "$work/www/synthetic/items/3"
nginx_conf "$work" $P_NGINX
nginx -c "$work/nginx.conf" & pids+=($!)
for p in $P_STRATA $P_MITM $P_PYWB $P_NGINX; do wait_port $p; done
TS=$(zcat $work/rec.warc.gz | awk '/^WARC-Type: response/ {r=1} r && /^WARC-Date:/ {gsub(/[^0-9]/, "", $2); print substr($2, 1, 14); exit}')
PYWB_URL="http://127.0.0.1:$P_PYWB/c/${TS}id_/http://127.0.0.1:$P_FIX$TARGET"
for u in "http://127.0.0.1:$P_STRATA$TARGET" "http://127.0.0.1:$P_MITM$TARGET" "$PYWB_URL" "http://127.0.0.1:$P_NGINX/synthetic/items/3"; do
  cmp -s <(curl -s "$u") "$work/www/synthetic/items/3" || { echo "$u does not answer the recorded bytes" >&2; exit 1; }
done
echo "## replay: the same recorded ${SIZE}-byte answer, 64 connections, $RUNS runs of ${DURATION}s"
echo
echo "| run | nginx req/s | strata serve req/s | p99 ms | mitmdump --server-replay req/s | p99 ms | pywb req/s | p99 ms | strata ÷ faster peer | strata ÷ nginx |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for i in $(seq $RUNS); do
  read -r n_rps _ _ _ < <(measure "http://127.0.0.1:$P_NGINX/synthetic/items/3" 64)
  read -r s_rps _ s_p99 _ < <(measure "http://127.0.0.1:$P_STRATA$TARGET" 64)
  read -r m_rps _ m_p99 _ < <(measure "http://127.0.0.1:$P_MITM$TARGET" 64)
  read -r w_rps _ w_p99 _ < <(measure "$PYWB_URL" 64)
  python3 -c "print(f'| $i | $n_rps | $s_rps | $s_p99 | $m_rps | $m_p99 | $w_rps | $w_p99 | {$s_rps / max($m_rps, $w_rps):.1f} | {$s_rps / $n_rps:.2f} |')"
done
echo
fi

# 3. Import of a large WARC: the file's MB/s, the peak RSS (/usr/bin/time: it counts the pages of
# the store's file LMDB maps and touches) and the peak of the process's own memory (RssAnon,
# sampled every 100 ms), which is what a streamed import bounds.
if section import; then
python3 Benchmarks/scripts/make-warc.py "$WARC_MB" $work/big.warc >/dev/null
python3 Benchmarks/scripts/make-warc.py "$((WARC_MB / 4))" $work/big.warc.gz >/dev/null
echo "## import --warc: generated WARC files (JSON bodies of 4-32 KB, each different): ${WARC_MB} MB plain, and gzip per record"
echo
echo "| file | bytes | seconds | MB/s of the file | peak RSS MiB | peak RssAnon MiB | exchanges |"
echo "|---|---|---|---|---|---|---|"
for file in big.warc big.warc.gz; do
  rm -rf $work/imp
  /usr/bin/time -f "%e %M" -o $work/time.txt env STRATA_STORE=$work/imp $BIN/strata import big --warc $work/$file > $work/imp.txt &
  timer=$!; anon=0
  while kill -0 $timer 2>/dev/null; do
    child=$(pgrep -P $timer || true)
    if [ -n "$child" ]; then
      kb=$(awk '/^RssAnon:/ {print $2}' /proc/$child/status 2>/dev/null || echo 0)
      [ "${kb:-0}" -gt "$anon" ] && anon=$kb
    fi
    sleep 0.1
  done
  wait $timer
  read -r secs rss < $work/time.txt
  bytes=$(stat -c %s $work/$file)
  n=$(grep -o '^big: [0-9]*' $work/imp.txt | grep -o '[0-9]*$')
  python3 -c "print(f'| $file | $bytes | $secs | {$bytes / 1e6 / $secs:.1f} | {$rss / 1024:.0f} | {$anon / 1024:.0f} | $n |')"
done
rm -f $work/big.warc $work/big.warc.gz
fi
