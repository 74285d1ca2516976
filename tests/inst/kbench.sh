#!/usr/bin/env bash
# Full-recording cost on the kernels (tests/kernels) and tests/inst/bench.c
# (not a test: prints a table; part of `make bench`).
#   tests/inst/kbench.sh [reps]        (CT_BUILD; KBENCH_ALL=1: --full=all too;
#                                       KBENCH_SCALE=F: every size times F;
#                                       KBENCH_BEFORE=DIR: --full with the
#                                       runtime library of the build in DIR
#                                       too, interleaved: before and after;
#                                       KBENCH_ROWS=RE: only the rows whose
#                                       label matches the regex RE)
# Sizes: the plain -O2 build runs a few hundred ms (shorter runs made the
# ratios noise).  Each repetition runs the plain build, then the recorded one
# (interleaved: a change of load hits both); the figures are medians over the
# repetitions:
#   own     the program's own timed region (kernels' wall_ms, bench.c's
#           parallel time), recorded / plain
#   wall    the process's wall time (recorded: the trace's SUMMARY
#           program_wall_ns, without commrec's join), recorded / plain
#   cpu     the process's CPU time, user + system (the recorded process holds
#           the writer thread), recorded / plain
#   waits   the program threads' time waiting for room in their ring
#           (SUMMARY inst.full_wait_ns, summed over threads)
#   rec/acc records written per access made (the filter's effect), B/acc and
#           B/rec the compressed record data (commanalyze info, "record data")
#           per access made and per record; accesses: the runtime's own load
#           and store counts
#   wr ns   the writer thread's CPU per record (its own statistics, -v -v -v)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${CT_BUILD:-$ROOT/build}
export COMMREC_INST_LIBDIR=${COMMREC_INST_LIBDIR:-$B}
REPS=${1:-3}
SCALE=${KBENCH_SCALE:-1}
W=$(mktemp -d "${TMPDIR:-/tmp}/ct-kbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
gcc -O2 -pthread "$ROOT/tests/inst/bench.c" -o "$W/bench" || exit 1
CC=gcc "$ROOT/record/commrec-cc" -O2 -pthread "$ROOT/tests/inst/bench.c" -o "$W/bench-inst" || exit 1
printf 'int x;\n' >"$W/e.c" && gcc -shared -fPIC -o "$W/empty.so" "$W/e.c"
export COMMTRACE_RUNTIME="$W/empty.so"

# the program's own time in s, from its output
ptime() { sed -n 's/^time //p; s/^done .*wall_ms=\([0-9.]*\).*/\1 1000/p' "$1" | awk 'NF == 2 { print $1 / $2; next } { print }' | tail -1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
col() { awk -v k="$2" '{ print $k }' "$1" | median; }
sz() { awk -v s="$SCALE" -v n="$1" 'BEGIN { v = int(n * s); print (v > 0 ? v : 1) }'; }

# plain_run PROG ARGS...: appends "own wall cpu" to $W/p
plain_run() {
	/usr/bin/time -f '%e %U %S' -o "$W/pt" "$@" >"$W/out" 2>&1 || return
	echo "$(ptime "$W/out") $(awk 'END { print $1, $2 + $3 }' "$W/pt")" >>"$W/p"
}

# rec_run MODE OPT PROG ARGS...: appends "own wall cpu waits acc records bytes wrns"
# to $W/MODE (MODE b: the runtime library of KBENCH_BEFORE, found first)
rec_run() {
	local m=$1 opt=$2 lib=${LD_LIBRARY_PATH:-}; shift 2
	[ "$m" = b ] && lib=$KBENCH_BEFORE${lib:+:$lib}
	rm -rf "$W/$m.zst" "$W/$m.zst.spool"
	LD_LIBRARY_PATH=$lib "$B/commrec" -q -v -v -v -f -o "$W/$m.zst" --sampler inst "$opt" -- "$@" \
		>"$W/out" 2>"$W/err" ||
		{ echo "commrec $opt failed: $(tail -c 200 "$W/err")" >&2; return; }
	local own wr
	cat "$W/err" >>"$W/out"        # (bench.c prints its time on stderr)
	own=$(ptime "$W/out")
	wr=$(sed -n 's/.*writer: \([0-9]*\) records, .* (\([0-9.]*\) s cpu).*/\1 \2/p' "$W/err" |
		awk '$1 > 0 { printf "%.1f", $2 * 1e9 / $1 }')
	"$B/commanalyze" info "$W/$m.zst" | awk -v own="$own" -v wr="${wr:-0}" '
		{ sub(/^ +/, "") }
		/^program_wall_ns=/ { split($0, a, "="); w = a[2] }
		/^program_utime_ns=/ { split($0, a, "="); u = a[2] }
		/^program_stime_ns=/ { split($0, a, "="); s = a[2] }
		/^inst.full_wait_ns=/ { split($0, a, "="); wt = a[2] }
		/^inst.loads=/ { split($0, a, "="); acc += a[2] }
		/^inst.stores=/ { split($0, a, "="); acc += a[2] }
		/^records:/ { gsub(/,/, ""); n = $2 }
		/^record data:/ { b = $3 }
		END { printf "%s %.4f %.4f %.4f %d %d %d %s\n", own, w / 1e9, (u + s) / 1e9, wt / 1e9, acc, n, b, wr }' \
		>>"$W/$m"
}

# row LABEL PLAIN INST ARGS...
row() {
	local label=$1 plain=$2 inst=$3; shift 3
	local modes="f" m
	[[ $label =~ ${KBENCH_ROWS:-.} ]] || return 0
	[ -n "${KBENCH_BEFORE:-}" ] && modes="$modes b"
	[ "${KBENCH_ALL:-0}" = 1 ] && modes="$modes a"
	: >"$W/p"; : >"$W/f"; : >"$W/a"; : >"$W/b"
	for _ in $(seq "$REPS"); do
		plain_run "$plain" "$@"
		for m in $modes; do
			case $m in
			a) rec_run a --full=all "$inst" "$@" ;;
			*) rec_run "$m" --full "$inst" "$@" ;;
			esac
		done
	done
	if [ ! -s "$W/p" ] || [ ! -s "$W/f" ]; then
		printf '%-34s n/a (a run failed)\n' "$label"
		return
	fi
	local po pw pc
	po=$(col "$W/p" 1); pw=$(col "$W/p" 2); pc=$(col "$W/p" 3)
	for m in $modes; do
		[ -s "$W/$m" ] || continue
		local l=$label
		[ "$m" = a ] && l="  the same, --full=all"
		[ "$m" = b ] && l="  the same, before (KBENCH_BEFORE)"
		awk -v l="$l" -v po="$po" -v pw="$pw" -v pc="$pc" \
			-v o="$(col "$W/$m" 1)" -v w="$(col "$W/$m" 2)" -v c="$(col "$W/$m" 3)" \
			-v wt="$(col "$W/$m" 4)" -v acc="$(col "$W/$m" 5)" -v n="$(col "$W/$m" 6)" \
			-v b="$(col "$W/$m" 7)" -v wr="$(col "$W/$m" 8)" 'BEGIN {
			printf "%-34s %7.3f s %6.1fx %6.1fx %6.1fx %7.2f s %6.3f %6.4f %6.2f %6.1f\n",
				l, po, o / po, w / pw, c / pc, wt, n / acc, b / acc, b / n, wr }'
	done
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cpus; medians of $REPS interleaved runs (plain, recorded)"
printf '%-34s %9s %7s %7s %7s %9s %6s %6s %6s %6s\n' workload "plain" own wall cpu waits rec/acc B/acc B/rec "wr ns"
K=$B/kernels
row "stream (bench.c, 2 threads)" "$W/bench" "$W/bench-inst" 2 "$(sz 2500)" stream
row "hash (bench.c, 2 threads)" "$W/bench" "$W/bench-inst" 2 "$(sz 3500)" hash
row "stencil -t 4 -c 4096 -s $(sz 8000)" "$K/stencil" "$K/stencil-inst" -t 4 -c 4096 -s "$(sz 8000)"
row "omp_reduce -t 4 -m 256 -i $(sz 3000)" "$K/omp_reduce" "$K/omp_reduce-inst" -t 4 -m 256 -i "$(sz 3000)"
row "alltoall -t 4 -k 65536 -r $(sz 300)" "$K/alltoall" "$K/alltoall-inst" -t 4 -k 65536 -r "$(sz 300)"
row "pipeline -t 4 -i $(sz 15000) -l 1024" "$K/pipeline" "$K/pipeline-inst" -t 4 -i "$(sz 15000)" -l 1024
