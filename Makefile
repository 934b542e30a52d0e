# The test command of the README and of CI: installs what the tests need,
# then checks formatting, vets and runs every test with the race detector.
# The Redis tests start a real redis-server and a 3-master Redis Cluster on
# loopback ports themselves, and stop them when they end.

GO ?= go

.PHONY: test deps fmt-check vet imports docs allocs quiet bench portal fuzz soak

# Nested modules with tests of their own (benchmarks/ has only benchmarks).
MODULES := prometheus

test: deps fmt-check vet imports docs allocs quiet
	$(GO) test -race -count=1 ./...
	for m in $(MODULES); do (cd $$m && $(GO) test -race -count=1 ./...) || exit 1; done

deps:
	@scripts/install-deps.sh

fmt-check:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd benchmarks && $(GO) vet ./...
	for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done

# core imports no web framework; no library package imports both.
imports:
	@scripts/check-imports.sh

# The documentation: every Go snippet of README.md and docs/ is a copy of
# code that compiles, and every relative link and #anchor resolves
# (internal/doccheck; no network). It runs again, with -race, in ./... .
docs:
	$(GO) test -count=1 ./internal/doccheck

# The allocation bounds of the request path (issue 13), without the race
# detector, which makes sync.Pool drop items at random: the tests are in
# files built only without it (alloc_test.go, build tag !race).
allocs:
	$(GO) test -count=1 -run 'Alloc' ./core/ ./ginlimit/ ./echolimit/

# The Redis store's tests of Redis's own timing against Timeout
# (core/redisstore/quiet_test.go, build tag !race): a paused Redis given up
# at about Timeout when the process is not slowed (ADR 0041), steady load,
# hiccups, a slow Redis. They assume a process that is not slowed and a
# Redis that gets a CPU within Timeout, which -race beside the other
# packages' tests on 2 cores does not grant, so they run apart, without it.
quiet:
	$(GO) test -count=1 -run 'Quiet|TestSteadyLoad|TestHiccups|TestRedisSlow' ./core/redisstore/

# Runs the example portal on 127.0.0.1:8080 with counts in memory.
portal:
	$(GO) run ./examples/portal

# Runs each fuzz target for a short while.
fuzz:
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzClientAddr -fuzztime=30s
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzParseRate -fuzztime=30s
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzTrustedClientAddr -fuzztime=30s
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzParseIPv4Port -fuzztime=30s

# The long load and fault runs (build tag soak; a few minutes, without
# the race detector): 10,000,000 new callers through memstore, a minute of
# steady load on Redis, a cluster master down for 30s. Each prints what it
# measured; docs/reliability.md lists them.
soak: deps
	$(GO) test -tags soak -run Soak -count=1 -v -timeout 60m ./core/...

# Compares ratescope with its peers; see benchmarks/README.md.
bench: deps
	cd benchmarks && ./run.sh
