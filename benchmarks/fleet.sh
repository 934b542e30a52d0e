#!/usr/bin/env bash
# Runs the fleet benchmark (cmd/fleet): N application processes on one
# Redis and on a 3-master Redis Cluster, ratescope beside ulule's and
# redis_rate's Redis stores, and ratescope at BASELINE (v0.1.0's code, the
# commit issue 28 measured) in the same run. Writes results/fleet.md and
# results/fleet.txt. About 2 minutes a round with the defaults, on 2 cores.
#
# Environment:
#   PROCS       numbers of processes (default 1,2,4)
#   GOROUTINES  goroutines per process (default 32)
#   DURATION    how long each case decides (default 5s)
#   ROUNDS      times each case runs; the median is shown (default 1)
#   TARGETS     redis, cluster (default both)
#   BASELINE    the commit of ratescope to compare with (default 3e46a79);
#               empty: none
set -euo pipefail
cd "$(dirname "$0")"

PROCS=${PROCS:-1,2,4}
GOROUTINES=${GOROUTINES:-32}
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-1}
TARGETS=${TARGETS:-redis,cluster}
BASELINE=${BASELINE-3e46a79}

out=results
mkdir -p "$out"
go build -o "$out/fleet" ./cmd/fleet
args=()
if [[ -n $BASELINE ]]; then
	# The baseline's tree, and a copy of this module's go.mod that points
	# the root module at it.
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mkdir "$tmp/src" "$tmp/mod"
	git -C .. archive "$BASELINE" | tar -x -C "$tmp/src"
	cp go.mod go.sum "$tmp/mod/"
	go mod edit -modfile="$tmp/mod/go.mod" -replace "github.com/ratescope/ratescope=$tmp/src"
	go build -modfile="$tmp/mod/go.mod" -o "$out/fleet-baseline" ./cmd/fleet
	args=(-baseline "$out/fleet-baseline" -baseline-label "$BASELINE")
fi
{
	echo "ratescope commit: $(git -C .. rev-parse --short HEAD)$(git -C .. diff --quiet HEAD -- ':!benchmarks/results' 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "date: $(date -u +%FT%TZ)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
	echo "redis: $(redis-server --version)"
	echo "go: $(go version)"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/fleet.txt"
"$out/fleet" -procs "$PROCS" -goroutines "$GOROUTINES" -duration "$DURATION" -rounds "$ROUNDS" \
	-targets "$TARGETS" "${args[@]}" -out "$out/fleet.md" 2>&1 | tee -a "$out/fleet.txt"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/fleet.txt"
