#!/usr/bin/env bash
# The fetch's CPU budget per request: the fixture server in its own process, the C floor's client
# (Benchmarks/Sources/CurlFloor) and `strata fetch --details`, each client at N and at 10 details
# (the difference removes process start), RUNS times. Needs perf (linux-perf) and gcc; run from
# the repository root after release builds of both products (the message below has the commands).
# Usage: Benchmarks/scripts/fetch-budget.sh [N=2000] [RUNS=3] [BYTES=4096]
set -euo pipefail
N=${1:-2000}; RUNS=${2:-3}; BYTES=${3:-4096}; PORT=${PORT:-18089}
BIN=.build/release
# The binaries measured (STRATA, SERVER: other builds, such as `make release`'s static strata).
STRATA=${STRATA:-$BIN/strata}; SERVER=${SERVER:-$BIN/strata-fixture-server}
command -v perf >/dev/null || { echo "needs perf: apt-get install -y linux-perf" >&2; exit 1; }
command -v gcc >/dev/null || { echo "needs gcc: apt-get install -y gcc" >&2; exit 1; }
[ -x "$STRATA" ] && [ -x "$SERVER" ] || {
  echo "build first: swift build -c release --product strata && swift build -c release --product strata-fixture-server" >&2; exit 1; }
server=""; work=$(mktemp -d); trap '[ -z "$server" ] || kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/main.c" <<'C'
#include "curl_floor.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int n = atoi(argv[2]), bytes = atoi(argv[3]);
    char **urls = malloc(sizeof(char *) * (n + 1));
    for (int i = 0; i <= n; i++) {
        urls[i] = malloc(256);
        if (i == 0) snprintf(urls[0], 256, "%s/synthetic/items?n=%d&bytes=%d", argv[1], n, bytes);
        else snprintf(urls[i], 256, "%s/synthetic/items/%d?bytes=%d", argv[1], i - 1, bytes);
    }
    if (curl_floor_fetch((const char *const *)urls, n + 1, 8) <= 0) { fprintf(stderr, "floor fetch failed\n"); return 1; }
    return 0;
}
C
gcc -O2 -IBenchmarks/Sources/CurlFloor/include "$work/main.c" Benchmarks/Sources/CurlFloor/curl_floor.c -lcurl -o "$work/floor"
"$SERVER" --root . --port $PORT > "$work/server.log" 2>&1 & server=$!
base=http://127.0.0.1:$PORT
down() { echo "the fixture server is not running (port $PORT taken? set PORT=...):" >&2; cat "$work/server.log" >&2; exit 1; }
# Whether the server runs: a server that exited stays a zombie child, which kill -0 still finds.
alive() { [ -r /proc/$server/stat ] && [ "$(awk '{print $3}' /proc/$server/stat)" != Z ]; }
for _ in $(seq 50); do alive || down; (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
# The server's CPU, 1/100 s (read before and after each client, so it also says the server still runs).
ticks() { alive || down; awk '{print $14 + $15}' /proc/$server/stat; }
# A client's CPU in ms; a failed client stops the script with its own message.
taskclock() {
  perf stat -x, -o "$work/perf.txt" -e task-clock "$@" >/dev/null 2>"$work/client.err" ||
    { echo "failed: $*" >&2; cat "$work/client.err" >&2; exit 1; }
  awk -F, '/task-clock/ {print $1}' "$work/perf.txt"
}
echo "client n cpu_ms server_cpu_ms"
for _ in $(seq "$RUNS"); do
  for n in 10 "$N"; do
    s0=$(ticks); t=$(taskclock "$work/floor" "$base" "$n" "$BYTES"); s1=$(ticks)
    echo "floor $n $t $(( (s1 - s0) * 10 ))"
    store="$work/store-$n"; rm -rf "$store"
    "$STRATA" source add bench --store "$store" --url "$base/synthetic/items?n=$n&bytes=$BYTES" \
      --items results --title title --detail-url-field url >/dev/null
    s0=$(ticks); t=$(taskclock "$STRATA" fetch bench --store "$store" --details --concurrency 8 --retries 0); s1=$(ticks)
    echo "strata $n $t $(( (s1 - s0) * 10 ))"
  done
done
