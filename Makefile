# Strata — `make demo` runs the main job end to end, `make test` runs the whole suite.
SHELL := /bin/bash
APT_PACKAGES = pkg-config liblmdb-dev libcurl4-openssl-dev libzstd-dev openssl libchafa-dev libglib2.0-dev libpng-dev libjpeg-dev
SWIFT ?= swift
STRATA := .build/debug/strata

.PHONY: deps build test demo bench stress coverage clean

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
