#!/bin/sh
# Times `ratescope replay` against the one-liner people run today on the
# same generated combined log of 2,000,000 lines (cmd/genlog): awk, sort,
# uniq -c, sort -rn, the requests per address per minute. The two run one
# after the other, alternating, PASSES times, so that both see the same
# load on a shared machine. Each run prints its wall time, user and
# system CPU seconds, and replay its lines per second of CPU.
#
# Usage: ./replay.sh [LINES] [PASSES]   (from benchmarks/)
set -eu
LINES=${1:-2000000}
PASSES=${2:-5}
DIR=${TMPDIR:-/tmp}/ratescope-replay-bench
mkdir -p "$DIR"
LOG=$DIR/access-$LINES.log
if [ ! -s "$LOG" ]; then
	go run ./cmd/genlog -lines "$LINES" > "$LOG"
fi
(cd .. && go build -o "$DIR/ratescope" ./cmd/ratescope)
echo "log: $LOG ($(wc -c < "$LOG") bytes, $LINES lines); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for pass in $(seq "$PASSES"); do
	/usr/bin/time -f "pass $pass one-liner             %e s wall, %U s user, %S s sys" \
		sh -c "awk '{print \$1, substr(\$4,2,17)}' '$LOG' | sort | uniq -c | sort -rn > /dev/null"
	/usr/bin/time -f "pass $pass replay GOMAXPROCS=1   %e s wall, %U s user, %S s sys, %M KB" \
		env GOMAXPROCS=1 "$DIR/ratescope" replay -quiet "$LOG" > /dev/null
	/usr/bin/time -f "pass $pass replay                %e s wall, %U s user, %S s sys, %M KB" \
		"$DIR/ratescope" replay -quiet "$LOG" > /dev/null
done 2>&1
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
