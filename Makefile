# The test command of the README and of CI: installs what the tests need,
# then checks formatting, vets and runs every test with the race detector.
# The Redis tests start a real redis-server and a 3-master Redis Cluster on
# loopback ports themselves, and stop them when they end.

GO ?= go

.PHONY: test deps fmt-check vet imports modules docs api api-update allocs speed quiet consumer modproxy bench portal fuzz soak load screenshot screenshot-dashboard

# Nested modules with tests of their own (benchmarks/ has only benchmarks).
# examples/portal is one so that its -metrics otel keeps OpenTelemetry out
# of the root go.mod (ADR 0017). browsertest/ drives a headless Chromium,
# which deps installs.
# internal/consumertest is the consumer test: it gets the modules, at the
# version they are at, through a file module proxy written from the working
# tree, into a fresh module outside the repository, and builds and runs the
# README's quick starts (about 30 s once the build cache holds Gin, Echo,
# Prometheus and OpenTelemetry compiled with -trimpath; the first run
# compiles them; see make consumer).
MODULES := prometheus otel examples/portal browsertest internal/consumertest

test: deps fmt-check vet imports modules docs api allocs speed quiet
	$(GO) test -race -count=1 ./...
	for m in $(MODULES); do (cd $$m && $(GO) test -race -count=1 -timeout 90m ./...) || exit 1; done

deps:
	@scripts/install-deps.sh

fmt-check:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd benchmarks && $(GO) vet ./...
	for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done

# core imports no web framework; no library package imports two of Gin,
# Echo v4 and Echo v5.
imports:
	@scripts/check-imports.sh

# Every nested module requires the others at one released version, with a
# replace line beside it for development in the repository (CONTRIBUTING.md).
modules:
	@scripts/release.sh --check

# The consumer test alone, with its timings (-v).
consumer:
	cd internal/consumertest && $(GO) test -count=1 -timeout 90m -v -run TestQuickStarts .

# Writes the modules of the working tree (the root module, prometheus and
# otel) as a file module proxy into PROXY, at the version the nested modules
# require, and prints the environment under which a module of your own,
# outside the repository, gets them from it (CONTRIBUTING.md, "Trying the
# modules of a clone").
PROXY ?= /tmp/ratescope-proxy
modproxy:
	@v=$$($(GO) -C prometheus list -m -f '{{.Version}}' github.com/ratescope/ratescope) && \
	dir=$$(mkdir -p "$(PROXY)" && cd "$(PROXY)" && pwd) && \
	(cd internal/consumertest && $(GO) run ./cmd/modproxy -repo ../.. -version $$v -out "$$dir") && \
	echo "wrote github.com/ratescope/ratescope, /prometheus and /otel $$v to $$dir; in your module run:" && \
	echo "GOPROXY=file://$$dir,https://proxy.golang.org GOFLAGS=-mod=mod GONOSUMDB=github.com/ratescope go get github.com/ratescope/ratescope@$$v"

# The documentation: every Go snippet of README.md and docs/ is a copy of
# code that compiles, and every relative link and #anchor resolves
# (internal/doccheck; no network). It runs again, with -race, in ./... .
docs:
	$(GO) test -count=1 ./internal/doccheck

# The exported API of every public package is written down in
# api/v0.1.0.txt (internal/apilist): this fails, printing the diff, when the
# code's API differs from it. After a change to the API that is meant,
# regenerate the listing with make api-update and commit it with the change.
api:
	$(GO) test -count=1 -run 'TestListing' ./internal/apilist

api-update:
	$(GO) run ./internal/apilist -w

# The allocation bounds of the request path, without the race
# detector, which makes sync.Pool drop items at random: the tests are in
# files built only without it (alloc_test.go, build tag !race). The live
# view's: its Observe allocates nothing, so a decision it observes
# allocates as one observed by a hook that does nothing.
allocs:
	$(GO) test -count=1 -run 'Alloc' ./core/ ./ginlimit/ ./echolimit/ ./echo5limit/ ./liveview/

# The speed guard of the request path (CONTRIBUTING.md): a request
# through the Gin middleware, in its default settings, against a bare Gin
# route in the same process, as a ratio to the figure recorded in
# ginlimit/speed_test.go (build tag !race, like the allocation bounds).
speed:
	$(GO) test -count=1 -run 'TestSpeedGuard' ./ginlimit/

# The Redis store's tests of Redis's own timing against Timeout
# (core/redisstore/quiet_test.go, build tag !race): a paused Redis given up
# at about Timeout when the process is not slowed (ADR 0007), steady load,
# hiccups, a slow Redis. They assume a process that is not slowed and a
# Redis that gets a CPU within Timeout, which -race beside the other
# packages' tests on 2 cores does not grant, so they run apart, without it.
quiet:
	$(GO) test -count=1 -run 'Quiet|TestSteadyLoad|TestHiccups|TestRedisSlow' ./core/redisstore/

# Runs the example portal on 127.0.0.1:8080 with counts in memory (a
# module of its own, ADR 0017).
portal:
	$(GO) -C examples/portal run .

# Writes docs/howto/replay-report.png, the screenshot of the replay report,
# and docs/howto/live-view.png, the live view's, that the browser tests
# take in headless Chromium (CONTRIBUTING.md, "The browser tests").
screenshot: deps
	cd browsertest && $(GO) test -count=1 -run 'TestReplayReportOfTheHowTo|TestLiveView/gin' -update-screenshot .

# Writes docs/grafana/ratescope.png, the picture of the Grafana dashboard's
# queries: browsertest's TestDashboardScreenshot runs them in Debian's
# prometheus, scraping both metrics modules under a load with Redis
# paused, and draws the answers on a page of its own (not Grafana).
screenshot-dashboard: deps
	cd browsertest && $(GO) test -count=1 -run 'TestDashboardScreenshot' -update-screenshot .

# Runs each fuzz target for a short while.
fuzz:
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzClientAddr -fuzztime=30s
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzParseRate -fuzztime=30s
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzTrustedClientAddr -fuzztime=30s
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzParseIPv4Port -fuzztime=30s
	$(GO) test ./cmd/ratescope/internal/replay/ -run='^$$' -fuzz=FuzzParseLine -fuzztime=30s
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzKeyUser -fuzztime=30s
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzKeyAddr -fuzztime=30s
	$(GO) test ./core/ -run='^$$' -fuzz=FuzzParseNetworks -fuzztime=30s

# The long load and fault runs (build tag soak; a few minutes, without
# the race detector): 10,000,000 new callers through memstore, a minute of
# steady load on Redis, a cluster master down for 30s. Each prints what it
# measured; docs/reliability.md lists them.
soak: deps
	$(GO) test -tags soak -run Soak -count=1 -v -timeout 60m ./core/...

# The portal under CPU burners on every core (build tag soak): 3,000
# IPv6 callers x 4 requests, 500 at a time, on a healthy Redis, 10 runs on
# each of Gin, Echo v4 and Echo v5, printing the callers over their limit
# and the load average; docs/reliability.md lists it. About 2 minutes.
load: deps
	cd examples/portal && $(GO) test -tags soak -run TestLoadLateAnswers -count=1 -v -timeout 30m .

# Compares ratescope with its peers; see benchmarks/README.md.
bench: deps
	cd benchmarks && ./run.sh
