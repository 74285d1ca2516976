#!/usr/bin/env bash
# Full-recording cost on the kernels (tests/kernels) and tests/inst/bench.c
# (not a test: prints a table; part of `make bench`).
#   tests/inst/kbench.sh [reps]        (CT_BUILD)
# Per workload: the plain -O2 build's time, and for `--sampler inst --full`
# (filtered) and `--full=all` (every access): the slowdown (median of reps
# interleaved runs, the program's own time: kernels' wall_ms, bench.c's
# parallel time), the records written per access made and the trace bytes
# per access made (accesses: the runtime's own load and store counts).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${CT_BUILD:-$ROOT/build}
export COMMREC_INST_LIBDIR=${COMMREC_INST_LIBDIR:-$B}
REPS=${1:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/ct-kbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
gcc -O2 -pthread "$ROOT/tests/inst/bench.c" -o "$W/bench" || exit 1
CC=gcc "$ROOT/record/commrec-cc" -O2 -pthread "$ROOT/tests/inst/bench.c" -o "$W/bench-inst" || exit 1
printf 'int x;\n' >"$W/e.c" && gcc -shared -fPIC -o "$W/empty.so" "$W/e.c"
export COMMTRACE_RUNTIME="$W/empty.so"

# the program's own time in s, from its output
ptime() { sed -n 's/^time //p; s/^done .*wall_ms=\([0-9.]*\).*/\1 1000/p' "$1" | awk 'NF == 2 { print $1 / $2; next } { print }' | tail -1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# row LABEL PLAIN INST ARGS...
row() {
	local label=$1 plain=$2 inst=$3; shift 3
	: >"$W/p" ; : >"$W/f" ; : >"$W/a"
	local fb=0 ab=0 facc=0 frec=0 arec=0
	for _ in $(seq "$REPS"); do
		"$plain" "$@" >"$W/out" 2>&1 && ptime "$W/out" >>"$W/p"
		for m in f a; do
			local opt=--full; [ $m = a ] && opt=--full=all
			rm -rf "$W/$m.zst" "$W/$m.zst.spool"
			"$B/commrec" -q -v -v -f -o "$W/$m.zst" --sampler inst $opt -- "$inst" "$@" >"$W/out" 2>"$W/err" ||
				{ echo "$label: commrec $opt failed: $(tail -c 200 "$W/err")"; return; }
			cat "$W/err" >>"$W/out"
			ptime "$W/out" >>"$W/$m"
		done
	done
	local acc n
	acc=$(sed -n 's/.*inst: \([0-9]*\) loads, \([0-9]*\) stores.*/\1 \2/p' "$W/err" | awk '{ print $1 + $2 }')
	for m in f a; do
		n=$("$B/commanalyze" info "$W/$m.zst" | awk -F'[ ,]+' '/^records:/ {print $2; exit}')
		eval "${m}rec=\$n; ${m}b=\$(stat -c %s \"\$W/\$m.zst\")"
	done
	local tp tf ta
	tp=$(median <"$W/p"); tf=$(median <"$W/f"); ta=$(median <"$W/a")
	awk -v l="$label" -v tp="$tp" -v tf="$tf" -v ta="$ta" -v acc="$acc" -v fr="$frec" -v ar="$arec" \
		-v fb="$fb" -v ab="$ab" 'BEGIN {
		printf "%-34s %8.3f s %7.1fx %7.1fx %7.3f %7.3f %7.3f %7.3f\n", l, tp, tf / tp, ta / tp,
			fr / acc, ar / acc, fb / acc, ab / acc }'
}

echo "load: $(uptime | sed 's/.*load average/load average/'); $(nproc) cpus; medians of $REPS interleaved runs"
printf '%-34s %10s %8s %8s %7s %7s %7s %7s\n' workload plain full full=all rec/acc "(all)" B/acc "(all)"
K=$B/kernels
row "stream (bench.c, 2 threads)" "$W/bench" "$W/bench-inst" 2 200 stream
row "hash (bench.c, 2 threads)" "$W/bench" "$W/bench-inst" 2 200 hash
row "stencil -t 4 -c 4096 -s 2000" "$K/stencil" "$K/stencil-inst" -t 4 -c 4096 -s 2000
row "omp_reduce -t 4 -m 256 -i 200" "$K/omp_reduce" "$K/omp_reduce-inst" -t 4 -m 256 -i 200
row "alltoall -t 4 -k 65536 -r 10" "$K/alltoall" "$K/alltoall-inst" -t 4 -k 65536 -r 10
row "pipeline -t 4 -i 2000 -l 1024" "$K/pipeline" "$K/pipeline-inst" -t 4 -i 2000 -l 1024
