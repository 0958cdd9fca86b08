#!/usr/bin/env python3
# An unchanged re-fetch of a 201-page list against its first fetch (docs/benchmarks.md): three fresh
# stores, one first fetch and five re-fetches each, medians of whole commands.
# Usage: python3 Benchmarks/scripts/refetch-ratio.py STRATA_BINARY FIXTURE_SERVER_PORT
import subprocess, time, statistics, os, sys, tempfile
binary, port = sys.argv[1], sys.argv[2]
firsts, refetches = [], []
for trial in range(3):
    store = tempfile.mkdtemp() + "/s"
    env = dict(os.environ, STRATA_STORE=store)
    subprocess.run([binary, "source", "add", "big", "--url", f"http://127.0.0.1:{port}/synthetic/items?n=20000&bytes=512", "--items", "results",
                    "--title", "title", "--page-param", "page", "--page-size", "100"], env=env, stdout=subprocess.DEVNULL, check=True)
    a = time.perf_counter(); subprocess.run([binary, "fetch", "big"], env=env, stdout=subprocess.DEVNULL, check=True); firsts.append(time.perf_counter() - a)
    for _ in range(5):
        a = time.perf_counter(); out = subprocess.run([binary, "fetch", "big"], env=env, capture_output=True, text=True, check=True); refetches.append(time.perf_counter() - a)
print(f"{binary}: first {statistics.median(firsts)*1000:.0f} ms, unchanged re-fetch {statistics.median(refetches)*1000:.0f} ms, ratio {statistics.median(refetches)/statistics.median(firsts):.2f}; last: {out.stdout.strip()}")
