#!/usr/bin/env bash
# libgomp's synchronization in exact traces (record/inst/inst_omp.c):
#   - tests/inst/omp_sync.c (4 threads, 10 rounds), recorded with
#     --full=all: exactly the sync records its calls imply: per thread and
#     round 2 each for omp_set_lock/unset, the nest lock, an unnamed and a
#     named critical section, an atomic on a long double (GOMP_atomic),
#     GOMP_barrier and the end of a dynamic loop (GOMP_loop_end): 14; per
#     parallel region 2 on the master (fork, join) and 2 per thread (begin,
#     end): 4*10*14 + 2 + 4*2 = 570; none with COMMTRACE_INST_SYNC=0
#   - the omp_reduce kernel (-t 4 -i 20: 22 parallel regions), --full:
#     exact with --sync only shows the regions' barrier traffic (every
#     worker at least one event per region: at each region's start it loads
#     the team's word, which another thread wrote since its own last write),
#     --sync exclude none of it, and include = exclude + only cell by cell
#     (the team's word has a line of its own)
. "$(dirname "$0")/../lib.sh"

INSTLIB=${COMMREC_INST_LIBDIR:-$CT_BUILD}
export COMMREC_INST_LIBDIR="$INSTLIB"
KREDUCE="$CT_BUILD/kernels/omp_reduce-inst"
require inst_omp "$COMMREC" "$COMMANALYZE" "$INSTLIB/libcommrec-inst.so" "$KREDUCE" gcc python3
printf 'int ct_inst_test_empty;\n' >"$WORK/empty.c"
gcc -shared -fPIC -o "$WORK/empty.so" "$WORK/empty.c" || { fail inst_omp_setup "empty.so"; done_tests; }
export COMMTRACE_RUNTIME="$WORK/empty.so"
unset COMMTRACE_SPOOL COMMTRACE_PID

if ! CC=gcc "$CT_ROOT/record/commrec-cc" -O1 -fopenmp "$CT_ROOT/tests/inst/omp_sync.c" \
	-o "$WORK/omp_sync" 2>"$WORK/cc.err"; then
	fail inst_omp_build "$(head -c 300 "$WORK/cc.err")"
	done_tests
fi

syncs() { "$COMMANALYZE" dump "$1" --type sample --raw | grep -c 'flags=.*sync'; }
for s in 1 0; do
	if ! COMMTRACE_INST_SYNC=$s "$COMMREC" -q -f -o "$WORK/s$s.zst" --sampler inst --full=all \
		-- "$WORK/omp_sync" 4 10 >"$WORK/out" 2>"$WORK/err"; then
		fail "inst_omp_record_$s" "$(tail -c 300 "$WORK/err")"
		done_tests
	fi
	check "inst_omp_program_ok_$s" grep -q 'counter=160 ld=40 part=10' "$WORK/out"
done
n=$(syncs "$WORK/s1.zst")
check inst_omp_sync_records test "$n" = 570
n0=$(syncs "$WORK/s0.zst")
check inst_omp_sync_off test "$n0" = 0

if ! "$COMMREC" -q -f -o "$WORK/r.zst" --sampler inst --full -- "$KREDUCE" -t 4 -m 64 -i 20 \
	>"$WORK/out" 2>"$WORK/err"; then
	fail inst_omp_record_reduce "$(tail -c 300 "$WORK/err")"
	done_tests
fi
for s in include exclude only; do
	"$COMMANALYZE" matrix "$WORK/r.zst" --model exact --sync "$s" --format csv -o "$WORK/$s.csv" 2>"$WORK/m.err" ||
		fail "inst_omp_matrix_$s" "$(head -c 300 "$WORK/m.err")"
done
check inst_omp_reduce_barrier_traffic python3 - "$WORK/include.csv" "$WORK/exclude.csv" "$WORK/only.csv" <<'PY'
import csv, sys
def load(p):
    rows = list(csv.reader(open(p)))
    return [[float(x) for x in r[1:]] for r in rows[1:]]
inc, exc, only = (load(p) for p in sys.argv[1:4])
n = len(inc)
regions = 22
ok = n == 4                                          # the master and 3 workers
# include = exclude + only, cell by cell
ok &= all(abs(inc[i][j] - exc[i][j] - only[i][j]) < 1e-9 for i in range(n) for j in range(n))
# the workers (threads with any sync traffic besides the master, row 0)
workers = [i for i in range(1, n) if sum(only[i]) > 0]
ok &= len(workers) == 3
ok &= all(sum(only[i]) >= regions for i in workers)
ok &= sum(inc[i][j] for i in range(n) for j in range(n)) > sum(exc[i][j] for i in range(n) for j in range(n))
sys.exit(0 if ok else 1)
PY
done_tests
