# Reads the markdown output of several `swift package benchmark` runs (one file per run, in run
# order) and prints the ratios table of docs/benchmarks.md: for every measure, the ratio of each
# run (both sides from that run), their median and range, and whether the median holds the target.
#
#   awk -f Benchmarks/report.awk run1.md run2.md ...

FNR == 1 { runs++ }
/^### / { name = substr($0, 5); next }
/^\| Time \(wall clock\)/ {
    split($0, c, "|"); gsub(/[ ,]/, "", c[5])
    p50[runs, name] = c[5] + 0
}

# The p50 (ms) of the benchmark whose name starts with `prefix` in run `r`; 0 when missing.
function find(r, prefix,   k, parts) {
    for (k in p50) {
        split(k, parts, SUBSEP)
        if (parts[1] == r && index(parts[2], prefix) == 1) return p50[k]
    }
    return 0
}

# Median of v[1..n] (sorts v in place).
function median(v, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}

# One row: reference throughput over Strata's, per run (reference time / Strata time).
function row(label, strata, reference, suffix, target, threshold, scale, unit,   r, n, s, f, ratio, list, v, ss, ff, lo, hi, med, held, fmt) {
    n = 0; list = ""
    for (r = 1; r <= runs; r++) {
        s = find(r, strata); f = find(r, reference)
        if (s <= 0 || f <= 0) continue
        n++; ratio[n] = f / s; ss[n] = s; ff[n] = f
        list = list (list == "" ? "" : ", ") sprintf("%.2f", f / s)
    }
    if (n == 0) { printf "| %s | n/a | | | | %s | |\n", label, target; return }
    lo = ratio[1]; hi = ratio[1]
    for (v = 2; v <= n; v++) { if (ratio[v] < lo) lo = ratio[v]; if (ratio[v] > hi) hi = ratio[v] }
    med = median(ratio, n)
    # threshold "": a target measured elsewhere; "-": no target (a row for context)
    held = threshold == "" ? "see below" : threshold == "-" ? "—" : (med >= threshold ? "yes" : "**no**")
    fmt = scale == 1 ? "%.0f" : "%.2f"
    printf "| %s | **%.2f%s** | %.2f–%.2f | %s | " fmt " %s / " fmt " %s | %s | %s |\n", label, med, suffix, lo, hi, list,
        median(ss, n) * scale, unit, median(ff, n) * scale, unit, target, held
}

END {
    printf "Ratios are throughput ratios, reference time / Strata time (higher is better for Strata), each from one run's p50s (7 samples after a warm-up); the table gives their median over the %d runs, their range and every run's value.\n\n", runs
    print "| measure | median ratio | range | per run | p50 Strata / reference (medians) | target | median holds? |"
    print "|---|---|---|---|---|---|---|"
    row("synthetic ingest vs raw LMDB floor, 100 events per transaction", "IngestB100/Strata", "IngestB100/floor", "", "≥ 0.8", 0.8, 1, "ms")
    row("synthetic ingest vs raw LMDB floor, 1,000 events per transaction", "Ingest/Strata", "Ingest/floor", "", "≥ 0.8", 0.8, 1, "ms")
    row("synthetic ingest vs raw LMDB floor, 10,000 events per transaction", "IngestB10000/Strata", "IngestB10000/floor", "", "≥ 0.8", 0.8, 1, "ms")
    row("synthetic ingest vs GRDB peer", "Ingest/Strata", "Ingest/GRDB", "×", "≥ 1.0×", 1.0, 1, "ms")
    row("encrypted ingest vs unencrypted, 1,000 events per append", "IngestEncrypted/Strata", "Ingest/Strata", "", "≥ 0.8", 0.8, 1, "ms")
    row("real 16 KB bodies vs JSONDecoder-only decode", "RealBody/Strata", "RealBody/Foundation", "×", "≥ 5×", 5, 1, "ms")
    row("fetch of list + 500 details, 8 in flight, vs raw libcurl", "Fetch/Strata", "Fetch/floor", "", "≥ 0.8", 0.8, 1, "ms")
    row("the same fetch, the server answering each request 5 ms late (unless `STRATA_BENCH_LATENCY_MS`), vs raw libcurl", "FetchRemote/Strata", "FetchRemote/floor", "", "none: context for the row above", "-", 1, "ms")
    row("rebuild of the ingest log vs raw LMDB floor", "Rebuild/Strata", "Rebuild/floor", "", "≥ 0.7", 0.7, 1, "ms")
    row("as-of read, mean of 20k (20k-event log) vs raw LMDB seek", "AsOf/Strata", "AsOf/floor", "", "p99 < 100 µs on 1 M events (`strata bench asof`)", "", 1000 / 20000, "µs")
}
