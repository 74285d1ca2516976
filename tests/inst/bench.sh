#!/usr/bin/env bash
# Cost of the inst sampler on tests/inst/bench.c (not a test: prints a table).
#   tests/inst/bench.sh [threads] [rounds]      (CT_BUILD, COMMREC_INST_LIBDIR, CC)
# Columns: the kernel's parallel time (median of 3) and its ratio to the plain
# -O2 build (no instrumentation); for full traces, the trace size per access
# and the writer thread's CPU per record (median of 3, its own statistics).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${CT_BUILD:-$ROOT/build}
export COMMREC_INST_LIBDIR=${COMMREC_INST_LIBDIR:-$B}
T=${1:-2}
R=${2:-1000}
RF=${3:-200}           # rounds for full traces (slow)
W=$(mktemp -d "${TMPDIR:-/tmp}/ct-instbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
CC=${CC:-gcc}
$CC -O2 -pthread "$ROOT/tests/inst/bench.c" -o "$W/plain" || exit 1
CC=$CC "$ROOT/record/commrec-cc" -O2 -pthread "$ROOT/tests/inst/bench.c" -o "$W/inst" || exit 1
CC=$CC "$ROOT/record/commrec-cc" --no-func -O2 -pthread "$ROOT/tests/inst/bench.c" -o "$W/nofunc" || exit 1
printf 'int x;\n' >"$W/e.c" && gcc -shared -fPIC -o "$W/empty.so" "$W/e.c"
export COMMTRACE_RUNTIME="$W/empty.so"

median3() { sort -n | sed -n 2p; }
t_of() { sed -n 's/^time //p' "$1"; }

# run LABEL KERNEL ROUNDS PROG [commrec options]
declare -A base
run() {
	local label=$1 k=$2 r=$3 prog=$4; shift 4
	local times=()
	: >"$W/wstat"
	for _ in 1 2 3; do
		rm -rf "$W/t.zst" "$W/t.zst.spool"
		if [ $# -gt 0 ]; then
			"$B/commrec" -q -v -v -v -f -o "$W/t.zst" "$@" -- "$W/$prog" "$T" "$r" "$k" >/dev/null 2>"$W/err" || { cat "$W/err"; return; }
			# the writer's own statistics: ns of its CPU per record
			sed -n 's/.*writer: \([0-9]*\) records, .* (\([0-9.]*\) s cpu).*/\1 \2/p' "$W/err" >>"$W/wstat"
		else
			"$W/$prog" "$T" "$r" "$k" >/dev/null 2>"$W/err"
		fi
		local one
		one=$(t_of "$W/err")
		[ -n "$one" ] && times+=("$one")
	done
	if [ ${#times[@]} -lt 2 ]; then
		# a run that printed no time (it failed): say so instead of a ratio
		printf '%-7s %-22s %5d  n/a (%d of 3 runs gave a time: %s)\n' "$k" "$label" "$r" \
			"${#times[@]}" "$(head -c 200 "$W/err" | tr '\n' ' ')"
		return
	fi
	local t
	t=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (${#times[@]} + 1) / 2 ))p")
	[ "$label" = plain ] && base[$k.$r]=$t
	local extra=""
	if [ -e "$W/t.zst" ] && [[ " $* " == *" --full "* ]]; then
		local n size
		n=$("$B/commanalyze" info "$W/t.zst" | sed -n 's/^ *records=//p' | head -1)
		size=$(stat -c %s "$W/t.zst")
		local wns
		wns=$(awk '$1 > 0 { print $2 * 1e9 / $1 }' "$W/wstat" | median3)
		extra=$(awk -v n="${n:-0}" -v s="$size" -v t="$t" -v T="$T" -v w="${wns:-0}" 'BEGIN {
			if (n > 0) printf "%d records, %.2f bytes/record, %.0f ns/record/thread, writer %.1f ns/record", n, s / n, t * 1e9 * T / n, w
			else print "no records counted" }')
	fi
	local ratio
	ratio=$(awk -v t="$t" -v b="${base[$k.$r]:-}" 'BEGIN { if (b > 0) printf "%.1fx", t / b; else print "n/a" }')
	printf '%-7s %-22s %5d %9.4f s %8s  %s\n' "$k" "$label" "$r" "$t" "$ratio" "$extra"
}

echo "threads $T, $(nproc) cpus, CC=$CC; kernel, mode, rounds, parallel time (median of 3), ratio to plain"
for k in stream hash; do
	run plain "$k" "$R" plain
	run "inst, no commrec" "$k" "$R" inst
	run "sampled -c 500000" "$k" "$R" inst --sampler inst
	run "sampled -c 10000" "$k" "$R" inst --sampler inst -c 10000
	run "sampled -c 1000" "$k" "$R" inst --sampler inst -c 1000
	run plain "$k" "$RF" plain
	run "inst, no commrec" "$k" "$RF" inst
	run "full" "$k" "$RF" inst --sampler inst --full
	run "full, --no-func" "$k" "$RF" nofunc --sampler inst --full
done
