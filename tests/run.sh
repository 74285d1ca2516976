#!/usr/bin/env bash
# The test runner behind `make check`.
#
# Runs every unit test binary (build/tests/*) and every end-to-end script
# (tests/e2e/*.sh).  Each prints one line per test case:
#     PASS name            FAIL name: why            SKIP name: reason
# A program that exits non-zero without printing FAIL counts as one failure;
# one that runs longer than its time limit is killed and counts as a failure
# (TEST_TIMEOUT seconds, default 300, three times that with ASAN=1, whose
# instrumented programs run 2-3 times slower; a program that gets stuck must
# not hang CI).  The limit catches hangs, not slowness: on a machine with
# more runnable tasks than cpus (1-minute load average) it grows by that
# ratio, up to 8 times, when each program starts.  Each program's line shows its elapsed time.  The last line is
# the summary: "N passed, N failed, N skipped in S s".
# Filter with TESTS=pattern (substring of the program name).
#   tests/run.sh SCRIPT...   runs those scripts instead (make accuracy).
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
export CT_BUILD="$PWD/$B" CT_ROOT="$PWD"
TEST_TIMEOUT=${TEST_TIMEOUT:-$([ "${ASAN:-0}" = 1 ] && echo 900 || echo 300)}
log_dir=$(mktemp -d "${TMPDIR:-/tmp}/commtrace-tests.XXXXXX")
trap 'rm -rf "$log_dir"' EXIT
pass=0 fail=0 skip=0
failed_names=()
suite_start=$(date +%s.%N)

# seconds since $1 (date +%s.%N), one decimal
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# TEST_TIMEOUT scaled by the load per cpu (1 to 8 times)
time_limit() {
	awk -v t="$TEST_TIMEOUT" -v n="$(nproc)" '{ f = $1 / n; f = f < 1 ? 1 : (f > 8 ? 8 : f); printf "%d", t * f }' /proc/loadavg
}

run_one() {
	local name=$1; shift
	local out="$log_dir/$(basename "$name").log"
	local rc=0 t0
	t0=$(date +%s.%N)
	# its own process group, so that the time limit ends its children too
	local limit
	limit=$(time_limit)
	timeout -k 10 "$limit" "$@" >"$out" 2>&1 </dev/null || rc=$?
	local secs p f s
	secs=$(elapsed "$t0")
	p=$(grep -c '^PASS ' "$out"); f=$(grep -c '^FAIL ' "$out"); s=$(grep -c '^SKIP ' "$out")
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "FAIL $name: killed after the time limit of $limit s (TEST_TIMEOUT $TEST_TIMEOUT s, load $(cut -d' ' -f1 /proc/loadavg))" >>"$out"
		f=$((f + 1))
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name: exited with status $rc" >>"$out"
		f=1
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	grep -E '^(FAIL|SKIP) ' "$out" | sed "s|^|  $name: |"
	if [ "$f" -ne 0 ]; then
		failed_names+=("$name")
		echo "  --- output of $name (last 30 lines) ---"
		tail -n 30 "$out" | sed 's/^/  | /'
	fi
	printf '%-40s %3d passed %3d failed %3d skipped %7s s\n' "$name" "$p" "$f" "$s" "$secs"
}

want() { [ -z "${TESTS:-}" ] || [[ "$1" == *"$TESTS"* ]]; }

if [ $# -gt 0 ]; then
	for t in "$@"; do
		run_one "$(basename "$t" .sh)" bash "$t"
	done
else
	for t in "$B"/tests/*; do
		[ -x "$t" ] && [ -f "$t" ] || continue
		want "$t" || continue
		run_one "unit/$(basename "$t")" "$t"
	done
	for t in tests/e2e/*.sh; do
		[ -f "$t" ] || continue
		want "$t" || continue
		run_one "e2e/$(basename "$t" .sh)" bash "$t"
	done
fi

[ ${#failed_names[@]} -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "$pass passed, $fail failed, $skip skipped in $(elapsed "$suite_start") s"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
