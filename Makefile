# Strata — `make demo` runs the main job end to end, `make test` runs the whole suite.
SHELL := /bin/bash
APT_PACKAGES = pkg-config liblmdb-dev libcurl4-openssl-dev libzstd-dev zlib1g-dev libbrotli-dev openssl libchafa-dev libglib2.0-dev libpng-dev libjpeg-dev libsqlite3-dev tmux git sqlite3 postgresql wget curl chromium chromium-driver python3-pip
SWIFT ?= swift
STRATA := .build/debug/strata

.PHONY: deps build release format test demo bench bench-package bench-targets bench-serve bench-traffic bench-history bench-history-real bench-layout bench-start bench-teamlog bench-expressions bench-ui bench-ui-peer stress coverage clean

## Install missing Debian packages (as root), or print the command to run.
deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing Debian packages:$$missing"; \
	    echo "install them with: sudo apt-get update && sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi
	@[ -s $(AXE) ] || $(MAKE) --no-print-directory axe

## axe-core, the accessibility rules the browser test runs on every page it visits: the copy
## PyPI's axe-playwright-python 0.1.8 ships (axe-core 4.12.1; npm is not reachable here), its
## wheel and script checked against their SHA-256, in .build/deps (not in the repository).
AXE = .build/deps/axe.min.js
AXE_WHEEL = axe_playwright_python-0.1.8-py3-none-any.whl
.PHONY: axe
axe:
	@mkdir -p .build/deps && rm -rf .build/deps/wheel && \
	python3 -m pip download -q --no-deps --only-binary :all: --dest .build/deps/wheel axe-playwright-python==0.1.8 && \
	echo "fdd263c998388f1a8e67cad02677e612d946248bd44d163be5e8650ea31f95f8  .build/deps/wheel/$(AXE_WHEEL)" | sha256sum -c --quiet && \
	python3 -c 'import sys, zipfile; open(sys.argv[2], "wb").write(zipfile.ZipFile(sys.argv[1]).read("axe_playwright_python/axe.min.js"))' .build/deps/wheel/$(AXE_WHEEL) $(AXE).new && \
	echo "84494fec757e4710dc751c8d7a636e457f4532f08f85c86dc9070133fbff53bc  $(AXE).new" | sha256sum -c --quiet && mv $(AXE).new $(AXE) && rm -rf .build/deps/wheel

build: deps
	$(SWIFT) build --product strata
	$(SWIFT) build --product strata-fixture-server

## An optimized `strata` with the Swift runtime and Foundation linked in (starts about a third
## faster: docs/benchmarks.md), in its own build folder: .build-static/release/strata. Linked by
## the toolchain's lld with packed relative relocations: still position-independent, but its
## 170,000 relocations take 25 KB instead of 3 MB to read at every start. Without
## --export-dynamic (which swiftc passes for executables) the dynamic symbol table holds 625
## symbols instead of 45,000, so the loader's lookups and dladdr's scans at start are short.
STATIC_LINK = -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic
release: deps
	$(SWIFT) build -c release --product strata --static-swift-stdlib --scratch-path .build-static $(STATIC_LINK)

## Formatting: the toolchain's swift format with the committed .swift-format (four-space indents,
## 160 columns, layout only: its lint rules are off). `make format` rewrites the tree in place.
format:
	$(SWIFT) format -i -r --parallel Sources Tests

## The whole run's bound: about 3 minutes on 2 cores, so 15 minutes means a hang, not a slow machine.
TEST_SECONDS ?= 900

## A formatting difference, or a warning in our own code (Sources/, Tests/), fails the run: CI
## builds from a clean clone, so it sees every warning; an incremental build shows those of the
## files it recompiled.
test: deps
	@$(SWIFT) format lint --strict -r --parallel Sources Tests || { echo "make test: run 'make format' (the lines above are not formatted as .swift-format says)"; exit 1; }
	@log=$$(mktemp); set -o pipefail; $(SWIFT) build --build-tests 2>&1 | tee $$log; \
	warned=$$(grep -E '^$(CURDIR)/(Sources|Tests)/[^:]+:[0-9]+:[0-9]+: warning:' $$log | sort -u); rm -f $$log; \
	if [ -n "$$warned" ]; then echo "$$warned"; echo "make test: the build warned in our code (above); fix the warnings first"; exit 1; fi
	@timeout -k 30 $(TEST_SECONDS) $(SWIFT) test --skip-build || { rc=$$?; \
	  if [ $$rc = 124 ]; then echo "make test: the tests ran past $(TEST_SECONDS) s; a test hangs (a '◇ … started' line above without its '✔')"; fi; exit $$rc; }

## The main job end to end: a fixture API on loopback is mirrored into a fresh store, changes
## twice, and is read back now, in the past, as history, and verified.
demo: build
	$(STRATA) demo --fixtures fixtures

## Line coverage of the Domain and Presentation layers (their own tests and the app's), in a
## separate build folder so the regular build stays incremental.
LLVM_COV := $(dir $(realpath $(shell command -v $(SWIFT))))llvm-cov
coverage: deps
	$(SWIFT) build --build-tests --enable-code-coverage --scratch-path .build-cov
	$(SWIFT) test --skip-build --enable-code-coverage --scratch-path .build-cov \
	  --filter "StrataDomainTests|StrataPresentationTests|StrataAppTests"
	$(LLVM_COV) report .build-cov/debug/StrataPackageTests.xctest \
	  -instr-profile=.build-cov/debug/codecov/default.profdata Sources/StrataDomain Sources/StrataPresentation

# $(call replace_block,NAME,SECTION,DOC,SCRATCH): DOC's lines from `<!-- NAME:begin -->` to
# `<!-- NAME:end -->` replaced by the file SECTION (which carries both markers again).
replace_block = awk -v f=$(2) 'BEGIN{while((getline l < f)>0) s=s l "\n"} /<!-- $(1):begin -->/{printf "%s", s; skip=1; next} /<!-- $(1):end -->/{skip=0; next} !skip' $(3) > $(4) && cp $(4) $(3)

## The reliability tests at full scale (the suite runs them at CI scale): 1,000 kills of each
## writer kind, 1 M fuzzed bodies, patches and parser inputs, 10,000 tamper trials, a 1 MiB map
## grown to 2 GiB.
## Figures: docs/reliability.md.
STRESS_ENV = STRATA_CRASH_ITERATIONS=1000 STRATA_FETCH_CRASH_ITERATIONS=1000 STRATA_PUSH_CRASH_ITERATIONS=1000 STRATA_FUZZ_ITERATIONS=1000000 STRATA_PATCH_FUZZ_ITERATIONS=1000000 STRATA_INPUT_FUZZ_ITERATIONS=1000000 STRATA_TEAM_KILLS=1000 STRATA_REORDER_KILLS=200 STRATA_COMPACT_KILLS=200 STRATA_FORGET_KILLS=200 STRATA_ALERT_KILLS=500 \
	STRATA_TEAM_PAUSES=50 STRATA_TEAM_CUTS=200 STRATA_TAMPER_TRIALS=10000 STRATA_MAP_GROWTH_MB=2048 STRATA_TEST_CHILD_SECONDS=7200
stress: deps
	$(SWIFT) build --build-tests
	@set -e; log=$$(mktemp); rows=$$(mktemp); failed=0; \
	for spec in "killedWriters|SIGKILL of an appending process|1,000 kills" \
	            "killedFetches|SIGKILL of strata fetch and strata import|1,000 kills" \
	            "killedPushes|SIGKILL of strata push, every write reaching the server once|1,000 kills" \
	            "killedTeamPushes|SIGKILL of strata remote push, then PostgreSQL crashed mid-push; the team log checked|1,000 kills" \
	            "pullsKilledWhileTheyReorder|SIGKILL of strata remote pull while it puts the store in the log's order|200 kills" \
	            "watchKilledAtRandomPoints|SIGKILL of strata watch while it fetches, queues and delivers notifications; every change under one id|500 kills" \
	            "compactionsKilledAtAnyPoint|SIGKILL of strata compact while it copies, packs, swaps or cleans up|200 kills" \
	            "forgetsKilledAnywhere|SIGKILL of strata forget before, during or after its rewrite; the next command finds the store consistent|200 kills" \
	            "aNodePausedPastItsLease|a lease holder SIGSTOPped past its lease, another node takes over, the first resumes; its late push refused|50 rounds" \
	            "twoNodesPushAtOnce|two nodes pushing at once while a third pulls; the puller holds the log's order|3,000 events" \
	            "pushesThroughACutOrStalled|the connection to PostgreSQL cut or stalled mid-push through a loopback proxy|200 faults" \
	            "mutatedBodies|mutated fixture bodies through the response path|1,000,000 bodies" \
	            "strataAgreesWithTheReferenceApplier|generated JSON Patches against a reference RFC 6902 applier|1,000,000 patches" \
	            "parsersNeverTrap|generated --where, --sort, --set, --as-of and source definitions through their parsers|1,000,000 inputs" \
	            "malformedRequestsGetAClearAnswer|generated odd and hostile requests to strata serve|100,000 requests" \
	            "everyFlippedByte|one flipped bit in a stored envelope or body, then verify|10,000 trials" \
	            "aTinyMapGrows|a 1 MiB map grown by appends|to 2 GiB"; do \
	  test=$${spec%%|*}; rest=$${spec#*|}; what=$${rest%%|*}; scale=$${rest#*|}; \
	  echo "stress: $$test ($$scale)"; start=$$(date +%s); \
	  if env $(STRESS_ENV) $(SWIFT) test --skip-build --filter "$$test" > $$log 2>&1; then result=held; \
	  else result="FAILED: $$(grep -m1 -E 'recorded an issue|error' $$log | cut -c1-160)"; failed=1; fi; \
	  echo "| \`$$test\` | $$what | $$scale | $$result | $$(( $$(date +%s) - start )) s |" >> $$rows; tail -1 $$rows; \
	done; \
	{ echo "<!-- stress:begin -->"; \
	  echo "Last full run: $$(date -u +%Y-%m-%d), commit $$(git rev-parse --short HEAD 2>/dev/null || echo -), $$(nproc) cores, $$($(SWIFT) --version 2>/dev/null | head -1)."; \
	  echo; echo "| test | what | scale | result | time |"; echo "|---|---|---|---|---|"; cat $$rows; \
	  echo "<!-- stress:end -->"; } > $$log; \
	$(call replace_block,stress,$$log,docs/reliability.md,$$rows); rm -f $$log $$rows; \
	echo "figures written to docs/reliability.md"; exit $$failed

## Benchmarks/ (its own package): Strata beside the raw-LMDB and libcurl C floors, a GRDB peer and
## Foundation's decoder, BENCH_RUNS times (default 5); docs/benchmarks.md gets every ratio of every
## run, their medians and ranges (the last run's raw output: .build/bench/last-run.md). Then the other
## rows (Benchmarks/scripts/targets.sh with `make release`'s strata: rebuild and as-of on 1 M events,
## the list rows, re-fetch, process start, client CPU, and the git-scraping history against git and
## git-history, HISTORY_RUNS times), medians of BENCH_RUNS, into the same file. About an hour.
BENCH_RUNS ?= 5
bench: bench-package bench-targets

bench-package: deps
	@set -e; dir=$$(mktemp -d); runs=""; \
	for i in $$(seq $(BENCH_RUNS)); do \
	  echo "== make bench: run $$i of $(BENCH_RUNS)"; \
	  (cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark --no-progress --format markdown) | tee $$dir/run$$i.md; \
	  runs="$$runs $$dir/run$$i.md"; \
	done; \
	{ echo "<!-- bench:begin -->"; \
	  echo "Last run: $$(date -u +%Y-%m-%d), commit $$(git rev-parse --short HEAD 2>/dev/null || echo -), $$(nproc) cores, $$($(SWIFT) --version 2>/dev/null | head -1), $(BENCH_RUNS) runs of the suite in a row."; \
	  echo; awk -f Benchmarks/report.awk $$runs; echo "<!-- bench:end -->"; } > $$dir/section.md; \
	mkdir -p .build/bench; cp $$dir/run$(BENCH_RUNS).md .build/bench/last-run.md; \
	$(call replace_block,bench,$$dir/section.md,docs/benchmarks.md,$$dir/doc.md); rm -rf $$dir; \
	echo "ratios of $(BENCH_RUNS) runs written to docs/benchmarks.md"

bench-targets: release
	@for p in bc perf gcc; do command -v $$p >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bc linux-perf gcc >/dev/null; break; }; done
	@python3 -c 'import venv, ensurepip' 2>/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
	$(SWIFT) build -c release --product strata-fixture-server
	@set -e; dir=$$(mktemp -d); \
	Benchmarks/scripts/targets.sh .build-static/release/strata .build/release/strata-fixture-server $(BENCH_RUNS) $(HISTORY_RUNS) > $$dir/rows.md; \
	{ echo "<!-- targets:begin -->"; \
	  echo "Last run: $$(date -u +%Y-%m-%d), commit $$(git rev-parse --short HEAD 2>/dev/null || echo -), $$(nproc) cores, \`make bench-targets\` (\`Benchmarks/scripts/targets.sh\`, $(BENCH_RUNS) runs, the history rows $(HISTORY_RUNS)), \`make release\`'s strata."; \
	  echo; cat $$dir/rows.md; echo "<!-- targets:end -->"; } > $$dir/section.md; \
	cat $$dir/section.md; \
	$(call replace_block,targets,$$dir/section.md,docs/benchmarks.md,$$dir/doc.md); rm -rf $$dir; \
	echo "the targets' rows written to docs/benchmarks.md"

## `strata serve` beside nginx under wrk (a recorded 16 KB detail, 64 connections) and the cost of
## naming a point on a 1 M-event log; SERVE_RUNS runs of SERVE_SECONDS each. Figures: docs/benchmarks.md.
SERVE_RUNS ?= 5
SERVE_SECONDS ?= 10
bench-serve: deps
	@for p in wrk nginx; do command -v $$p >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx >/dev/null; break; }; done
	$(SWIFT) build -c release --product strata
	$(SWIFT) build -c release --product strata-fixture-server
	Benchmarks/scripts/serve-bench.sh $(SERVE_RUNS) $(SERVE_SECONDS)

## Recorded traffic: strata proxy's overhead against the direct server (p50 with one connection,
## req/s with 64), replay by strata serve beside mitmproxy's server replay and pywb (PyPI, in
## Benchmarks/.venv) on Strata's own HAR and WARC exports with nginx as the limit, and the import
## of a generated 1 GB WARC (MB/s, peak RSS). Figures: docs/benchmarks.md.
TRAFFIC_RUNS ?= 3
TRAFFIC_SECONDS ?= 8
TRAFFIC_WARC_MB ?= 1024
bench-traffic: deps
	@for p in wrk nginx; do command -v $$p >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx >/dev/null; break; }; done
	@python3 -c 'import venv, ensurepip' 2>/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
	$(SWIFT) build -c release --product strata
	$(SWIFT) build -c release --product strata-fixture-server
	Benchmarks/scripts/traffic-bench.sh $(TRAFFIC_RUNS) $(TRAFFIC_SECONDS) $(TRAFFIC_WARC_MB)

## What a git-scraping history costs, on two workloads (HISTORY_SHAPES: `pages`, 100–300 KB
## objects whose long-text items are a minority of the bytes, as real scraping histories are;
## `items`, a ~200 KB list of 650 small items): the store against `git gc --aggressive` and
## git-history's SQLite database, `import --git` against git-history (pip, in Benchmarks/.venv),
## and the p99 of reading any body version; HISTORY_RUNS runs of HISTORY_VERSIONS versions.
## Figures: docs/benchmarks.md.
HISTORY_RUNS ?= 5
HISTORY_VERSIONS ?= 2500
HISTORY_SHAPES ?= pages items
bench-history: deps
	@command -v bc >/dev/null && command -v mdb_stat >/dev/null && command -v zstd >/dev/null && command -v xz >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bc python3-venv lmdb-utils zstd xz-utils >/dev/null; }
	$(SWIFT) build -c release --product strata
	for shape in $(HISTORY_SHAPES); do Benchmarks/scripts/history-size.sh .build/release/strata $(HISTORY_RUNS) $(HISTORY_VERSIONS) $$shape || exit 1; done

## The same on real scraping histories (docs/benchmarks.md): the first HISTORY_REAL_VERSIONS
## commits of simonw/ca-fires-history's incidents.json (an object, its items under Incidents) and
## of simonw/pge-outages' outages.json (a list of outages that come and go), cloned once into
## .build/history/ (HISTORY_FIRES and HISTORY_OUTAGES name other clones or URLs).
HISTORY_REAL_VERSIONS ?= 2500
HISTORY_FIRES ?= https://github.com/simonw/ca-fires-history
HISTORY_OUTAGES ?= https://github.com/simonw/pge-outages
bench-history-real: deps
	@command -v bc >/dev/null && command -v mdb_stat >/dev/null && command -v zstd >/dev/null && command -v xz >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bc python3-venv lmdb-utils zstd xz-utils >/dev/null; }
	$(SWIFT) build -c release --product strata
	@mkdir -p .build/history
	@[ -d .build/history/fires ] || git clone -q --bare $(HISTORY_FIRES) .build/history/fires
	@[ -d .build/history/outages ] || git clone -q --bare $(HISTORY_OUTAGES) .build/history/outages
	HISTORY_REPO=.build/history/fires HISTORY_FILE=incidents.json HISTORY_ID=UniqueId HISTORY_ITEMS=Incidents \
	  Benchmarks/scripts/history-size.sh .build/release/strata $(HISTORY_RUNS) $(HISTORY_REAL_VERSIONS)
	HISTORY_REPO=.build/history/outages HISTORY_FILE=outages.json HISTORY_ID=F_OUTAGE_ID \
	  Benchmarks/scripts/history-size.sh .build/release/strata $(HISTORY_RUNS) $(HISTORY_REAL_VERSIONS)

## What body layouts with a read bounded as the store's allow, outside Strata, on the four
## histories (docs/benchmarks.md): Benchmarks/scripts/layout-bounds.py (zstandard, pip, in
## Benchmarks/.venv) on `make bench-history`'s two generated histories and the clones of
## `make bench-history-real`; Benchmarks/scripts/replay-reads.c times the shared layout's reads.
bench-layout: deps
	@python3 -c 'import venv, ensurepip' 2>/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
	@[ -x Benchmarks/.venv/bin/python ] || python3 -m venv Benchmarks/.venv
	@Benchmarks/.venv/bin/python -c 'import zstandard' 2>/dev/null || Benchmarks/.venv/bin/pip install -q zstandard
	@mkdir -p .build/history
	@[ -d .build/history/fires ] || git clone -q --bare $(HISTORY_FIRES) .build/history/fires
	@[ -d .build/history/outages ] || git clone -q --bare $(HISTORY_OUTAGES) .build/history/outages
	@work=$$(mktemp -d) && trap 'rm -rf "$$work"' EXIT && py=Benchmarks/.venv/bin/python && bounds=Benchmarks/scripts/layout-bounds.py && \
	  cc=$$(command -v cc || command -v clang) && "$$cc" -O2 -o "$$work/replay-reads" Benchmarks/scripts/replay-reads.c -lzstd && \
	  for shape in pages items; do python3 Benchmarks/scripts/scraping-history.py "$$work/$$shape" --versions $(HISTORY_VERSIONS) --shape $$shape >/dev/null; done && \
	  $$py $$bounds "$$work/pages" items.json --items items --versions $(HISTORY_VERSIONS) --dump "$$work/reads" && "$$work/replay-reads" "$$work/reads" && \
	  $$py $$bounds "$$work/items" items.json --versions $(HISTORY_VERSIONS) --dump "$$work/reads" && "$$work/replay-reads" "$$work/reads" && \
	  $$py $$bounds .build/history/fires incidents.json --items Incidents --id UniqueId --versions $(HISTORY_REAL_VERSIONS) --dump "$$work/reads" && "$$work/replay-reads" "$$work/reads" && \
	  $$py $$bounds .build/history/outages outages.json --id F_OUTAGE_ID --versions $(HISTORY_REAL_VERSIONS) --dump "$$work/reads" && "$$work/replay-reads" "$$work/reads"

## The expression language (docs/benchmarks.md): a range and a facet through the indexes on 1,000
## and 200,000 items, a scan beside them, and `changes --when` over 1,000,000 item versions.
EXPRESSION_RUNS ?= 5
bench-expressions: deps
	$(SWIFT) build -c release --product strata
	Benchmarks/scripts/expression-bench.sh .build/release/strata $(EXPRESSION_RUNS) 4

## The web UI's pages: answer times on 1,000 and 200,000 items, an item with 1,000 versions, changes.
bench-ui: deps
	$(SWIFT) build -c release --product strata
	Benchmarks/scripts/ui-bench.sh .build/release/strata 200

## The web UI beside Datasette over git-history's database of the same scraping history (wrk;
## git-history and Datasette from PyPI in Benchmarks/.venv).
bench-ui-peer: deps
	@python3 -c 'import venv, ensurepip' 2>/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
	@command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
	$(SWIFT) build -c release --product strata
	Benchmarks/scripts/ui-peer.sh .build/release/strata 400 400 10

## Process start: `strata list NAME --limit 10` on a warm 1,000-item store against a C program
## that opens the same LMDB environment and reads the same 10 rows (Benchmarks/scripts/start-floor.c),
## for the release build and for `make release`'s; medians of 21 runs.
bench-start: release
	@command -v bc >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bc >/dev/null; }
	$(SWIFT) build -c release --product strata
	@echo "| strata | strata list | C floor | ratio |"; echo "|---|---|---|---|"
	@Benchmarks/scripts/start-ratio.sh .build/release/strata
	@Benchmarks/scripts/start-ratio.sh .build-static/release/strata

## The team log: push and pull of 20,000 events in batches of 1,000 against a floor of plain
## `INSERT … SELECT unnest(…)` / `SELECT` with postgres-nio, on a PostgreSQL 15 the script starts
## in a temporary directory; TEAMLOG_RUNS runs. Figures: docs/benchmarks.md.
TEAMLOG_RUNS ?= 5
bench-teamlog: deps
	@command -v /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }
	$(SWIFT) build -c release --product strata-lab
	Benchmarks/scripts/teamlog-bench.sh .build/release/strata-lab $(TEAMLOG_RUNS)

clean:
	rm -rf .build
