#!/usr/bin/env bash
# Runs the comparison benchmarks several times, summarises them with
# benchstat (medians with their spread) and writes the tables of README.md
# to results/tables.md. About 15 minutes on 2 cores with the defaults
# (estimated from one pass: 2.5 minutes with COUNT=1 MEM_COUNT=1 BENCHTIME=200ms).
#
# Environment:
#   COUNT       runs of each HTTP, Redis and flood benchmark (default 5)
#   MEM_COUNT   runs of each memory benchmark, ~10s each (default 2)
#   BENCHTIME   -benchtime of the HTTP, Redis and flood benchmarks (default 300ms)
#   BENCH       only the groups named, of: http redis memory (default all)
set -euo pipefail
cd "$(dirname "$0")"

COUNT=${COUNT:-5}
MEM_COUNT=${MEM_COUNT:-2}
BENCHTIME=${BENCHTIME:-300ms}
BENCH=${BENCH:-http redis memory}

# benchstat, pinned, in a folder of this module (not on the module's
# requirements: it would bring its dependencies into go.mod).
BENCHSTAT_VERSION=v0.0.0-20260908200009-22c9c6c9d4da
bin=$PWD/.bin
if [[ ! -x $bin/benchstat || $(cat "$bin/benchstat.version" 2>/dev/null) != "$BENCHSTAT_VERSION" ]]; then
	GOBIN=$bin GOFLAGS=-mod=mod go install "golang.org/x/perf/cmd/benchstat@$BENCHSTAT_VERSION"
	echo "$BENCHSTAT_VERSION" >"$bin/benchstat.version"
fi

out=results
mkdir -p "$out"
{
	echo "ratescope commit: $(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C .. diff --quiet HEAD -- . ':!benchmarks' 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "date: $(date -u +%FT%TZ)"
	echo "go: $(go version)"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
} >"$out/env.txt"
cat "$out/env.txt"

# run builds the test binary once and runs the benchmarks count times, each
# time all of them once, so that a change of the machine's load (it is
# shared) falls on every contender alike rather than on those run last.
run() { # name, count, test binary arguments...
	local name=$1 count=$2
	shift 2
	echo "== $name"
	go test -c -o "$out/bench.test" .
	: >"$out/$name.txt"
	for ((i = 0; i < count; i++)); do
		"$out/bench.test" -test.run '^$' "$@" | tee -a "$out/$name.txt"
	done
	"$bin/benchstat" "$out/$name.txt" >"$out/$name.benchstat.txt"
}
files=()
for group in $BENCH; do
	case $group in
	http) run http "$COUNT" -test.bench '^Benchmark(Gin|Echo|Echo5)$' -test.benchtime "$BENCHTIME" -test.benchmem ;;
	redis) run redis "$COUNT" -test.bench '^Benchmark(Redis|Flood)$' -test.benchtime "$BENCHTIME" -test.benchmem ;;
	memory) run memory "$MEM_COUNT" -test.bench '^BenchmarkMemory$' -test.benchtime 1x -test.timeout 30m ;;
	*) echo "run.sh: unknown group $group" >&2; exit 2 ;;
	esac
	files+=("$out/$group.txt")
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >>"$out/env.txt"
go run ./cmd/benchtable "${files[@]}" >"$out/tables.md"
echo "== tables: $out/tables.md; benchstat summaries: $out/*.benchstat.txt"
