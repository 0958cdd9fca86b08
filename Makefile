# Strata — `make demo` runs the main job end to end, `make test` runs the whole suite.
SHELL := /bin/bash
APT_PACKAGES = pkg-config liblmdb-dev libcurl4-openssl-dev libzstd-dev openssl libchafa-dev libglib2.0-dev libpng-dev libjpeg-dev
SWIFT ?= swift
STRATA := .build/debug/strata

.PHONY: deps build test demo bench stress clean

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

build: deps
	$(SWIFT) build --product strata
	$(SWIFT) build --product strata-fixture-server

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## The main job end to end: a fixture API on loopback is mirrored into a fresh store, changes
## twice, and is read back now, in the past, as history, and verified.
demo: build
	@set -e; tmp=$$(mktemp -d); export STRATA_STORE=$$tmp/store; \
	step() { printf '\n$$ strata %s\n' "$$*"; $(STRATA) "$$@"; }; \
	.build/debug/strata-fixture-server --port 0 > $$tmp/server.log & server=$$!; \
	trap 'kill $$server 2>/dev/null; rm -rf "$$tmp"' EXIT; \
	for i in $$(seq 50); do grep -q serving $$tmp/server.log 2>/dev/null && break; sleep 0.1; done; \
	base=$$(sed -n 's/.* on \(http[^ ]*\).*/\1/p' $$tmp/server.log); echo "fixture API at $$base (dataset v1)"; \
	step source add cars --url $$base/cars/offers --items results --title make --subtitle model --image image \
	  --page-param page --page-size 10 --index make,model; \
	step source add pokedex --url $$base/pokedex/pokemon --items results --id name --detail-url-field url \
	  --image sprites.front_default; \
	step fetch --details --images; \
	step fetch; \
	kill -USR1 $$server; sleep 0.3; echo; echo "fixture API now serves v2"; \
	step fetch --details --images; \
	kill -USR1 $$server; sleep 0.3; echo; echo "fixture API now serves v3"; \
	step fetch --details --images; \
	first=$$($(STRATA) log --stream cars --type FetchCompleted --oldest-first --limit 1 --format ndjson | sed -n 's/.*"seq":\([0-9]*\).*/\1/p'); \
	step log --limit 6; \
	step doc history cars 9 --projection items; \
	step doc history cars 3 --projection items; \
	step doc show pokedex ivysaur --projection images; \
	step doc list cars --projection items --as-of $$first; \
	step doc diff cars --projection items --from $$first; \
	step stats; \
	step verify

## The reliability tests at full scale (the suite runs them at CI scale): 1,000 kills of each
## writer kind, 1 M fuzzed bodies, 10,000 tamper trials, a 1 MiB map grown to 2 GiB.
## Figures: docs/reliability.md.
stress: deps
	$(SWIFT) build --build-tests
	STRATA_CRASH_ITERATIONS=1000 STRATA_FETCH_CRASH_ITERATIONS=1000 STRATA_FUZZ_ITERATIONS=1000000 \
	STRATA_TAMPER_TRIALS=10000 STRATA_MAP_GROWTH_MB=2048 $(SWIFT) test --skip-build \
	  --filter 'killedWriters|killedFetches|mutatedBodies|everyFlippedByte|aTinyMapGrows'

## Benchmarks/ (its own package): Strata's ingest beside the raw-LMDB C floor and a GRDB peer.
bench: deps
	cd Benchmarks && swift package --disable-sandbox benchmark --no-progress --format markdown

clean:
	rm -rf .build
