#!/usr/bin/env bash
# make fuzz: run each fuzz target for FUZZ_TIME seconds (default 60).
#   tests/fuzz/run.sh build/fuzz/NAME_fuzz...
# Each target starts from its committed corpus (tests/fuzz/corpus/NAME/,
# read only) and keeps what it finds in build/fuzz/NAME.corpus/; crashes go
# to build/fuzz/NAME.crashes/.  The last line per target gives executions,
# coverage (libFuzzer's cov: edges, ft: features) and the corpus size, for
# the README's reliability section.
set -u
cd "$(dirname "$0")/../.."
# the join target writes files per input: in memory when possible
[ -d /dev/shm ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm
B=${B:-build}
T=${FUZZ_TIME:-60}
status=0
for bin in "$@"; do
	name=$(basename "$bin" _fuzz)
	seeds=tests/fuzz/corpus/$name
	work=$B/fuzz/$name.corpus
	crashes=$B/fuzz/$name.crashes
	mkdir -p "$work" "$crashes"
	log=$B/fuzz/$name.log
	echo "fuzz: $name for $T s (seeds $seeds, new inputs in $work)"
	rc=0
	"$bin" -max_total_time="$T" -max_len=65536 -print_final_stats=1 \
		-artifact_prefix="$crashes/" "$work" $( [ -d "$seeds" ] && echo "$seeds") >"$log" 2>&1 || rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\) corp: \([0-9]*\).*/cov \1, ft \2, corpus \3/p')
	echo "fuzz: $name: ${runs:-?} executions in $T s, ${cov:-no coverage line}, status $rc"
	if [ "$rc" -ne 0 ]; then
		status=1
		echo "fuzz: $name FAILED, see $log and $crashes/"
		tail -n 20 "$log"
	fi
done
exit $status
