#!/usr/bin/env bash
# Sweep benchmark: a 64-point sweep (board-size 8 values x period-multiplier
# 1..8) over one generated trace (ana_mktrace big N: 4 threads, samples,
# arms and hits), against the same 64 points analyzed one by one
# (`commanalyze matrix`, one process and one decode pass each).  Prints one
# table row: wall and CPU seconds (user + sys: the fair figure on a loaded
# machine), the speedups, and record x points per second of the sweep.
#   B=build N=2000000 J=<cores> tests/bench_sweep.sh
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
N=${N:-2000000}
J=${J:-$(nproc)}
CA="$B/commanalyze"
MK="$B/tests/ana_mktrace"
for f in "$CA" "$MK"; do
	[ -x "$f" ] || { echo "bench_sweep: build first ($f missing)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/ct-bench-sweep.XXXXXX")
trap 'rm -rf "$work"' EXIT
T="$work/t.zst"
"$MK" "$T" big "$N" || exit 1
boards="5,17,31,61,127,251,509,1021"

# run_timed OUTVAR cmd...: "wall cpu" of the command (children included)
TIMEFORMAT='%R %U %S'
timed() {
	local t
	t=$( { time "$@" >/dev/null 2>&1; } 2>&1 ) || { echo "bench_sweep: failed: $*" >&2; exit 1; }
	echo "$t" | awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }'
}
singles() {
	for b in ${boards//,/ }; do
		for k in 1 2 3 4 5 6 7 8; do
			"$CA" matrix "$T" --board-size "$b" --period-multiplier "$k" >/dev/null || return 1
		done
	done
}
sj=$(timed "$CA" sweep "$T" --param board-size=$boards --param period-multiplier=1..8 -j "$J" -q \
	--no-progress --csv "$work/s.csv")
s1=$(timed "$CA" sweep "$T" --param board-size=$boards --param period-multiplier=1..8 -j 1 -q \
	--no-progress --csv "$work/s1.csv")
ss=$(timed singles)
records=$(awk -v n="$N" 'BEGIN { print n + 2 * int((n + 60) / 64) }')
awk -v sj="$sj" -v s1="$s1" -v ss="$ss" -v r="$records" -v j="$J" 'BEGIN {
	split(sj, a, " "); split(s1, b, " "); split(ss, c, " ");
	printf "%-28s %9s %17s %17s %17s %9s %9s %12s\n", "benchmark", "records",
		"sweep -j" j " wall/cpu", "sweep -j1 wall/cpu", "64 singles w/cpu", "speedup", "cpu ratio",
		"rec*pts/s";
	printf "%-28s %9d %8.2fs/%6.2fs %8.2fs/%6.2fs %8.2fs/%6.2fs %8.1fx %8.1fx %12.3g\n",
		"sweep 64 pts (board x K)", r, a[1], a[2], b[1], b[2], c[1], c[2], c[1] / a[1],
		c[2] / b[2], r * 64 / a[1];
}'
cmp -s "$work/s.csv" "$work/s1.csv" || echo "bench_sweep: WARNING: -j $J and -j 1 results differ" >&2
