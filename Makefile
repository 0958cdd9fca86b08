# Strata — `make demo` runs the main job end to end, `make test` runs the whole suite.
SHELL := /bin/bash
APT_PACKAGES := pkg-config liblmdb-dev libcurl4-openssl-dev libzstd-dev
SWIFT ?= swift
STRATA := .build/debug/strata

.PHONY: deps build test demo clean

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

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## The core demo: three snapshots of a used-car collection recorded as events, then read back
## now, as of the first snapshot, as history and as a verified, deduplicated log.
demo: build
	@set -e; store=$$(mktemp -d)/store; \
	step() { printf '\n$$ strata %s\n' "$$*"; $(STRATA) --store "$$store" "$$@"; }; \
	export STRATA_STORE=$$store; \
	for v in 1 2 3; do \
	  step record --stream cars --type SnapshotRecorded --meta collection=cars --meta source=fixtures/snapshots \
	    --id cars-v$$v --recorded-at 2026-0$$v-01T09:00:00Z --payload fixtures/snapshots/cars-v$$v.json; \
	done; \
	step record --stream cars --type SnapshotRecorded --meta collection=cars --id cars-v3 --payload fixtures/snapshots/cars-v3.json; \
	step log; \
	step doc list cars; \
	step doc list cars --as-of 2026-01-15; \
	step doc history cars 3; \
	step doc history cars 4; \
	step doc show cars 5 --as-of 1; \
	step stats; \
	step verify; \
	rm -rf "$$(dirname $$store)"

clean:
	rm -rf .build
