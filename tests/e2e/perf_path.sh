#!/usr/bin/env bash
# The runtime's one perf sample path (record/runtime/rt_perf.c) as the pebs
# sampler drives it, on a machine without a PMU: the runtime is started
# directly (commrec refuses pebs here) with two software task-clock events
# in COMMTRACE_PMU_ATTRS standing in for the loads and stores events.  They
# go through everything a real PEBS pair does except the PMU: opened with
# pmu_open_precise on every thread, the second writing into the first one's
# ring (SET_OUTPUT), both signalling the thread, drained in its handler,
# filtered once, converted by the pebs converter.  A task-clock sample has no
# data address: the converter must skip every one as not_load_store.
#
#   perf_path/skips      every worker thread of write_volume has skipped
#                        samples (at least one per 5 ms of its CPU time
#                        expected: 2 events every 0.5 ms; P(0) < e^-10 for
#                        the 50 ms a worker needs at least)
#   perf_path/no-sample  no SAMPLE record (no address: nothing usable)
#   perf_path/reason     the skips are not_load_store (and the runtime's own)
. "$(dirname "$0")/../lib.sh"
. "$UBENCH_SRC/ubrec.sh"

if [ ! -x "$COMMREC" ] || [ ! -x "$COMMANALYZE" ] || [ ! -f "$CT_BUILD/libcommrec.so" ]; then
	skip perf_path "build commrec, commanalyze and libcommrec.so first (make)"
	done_tests
fi
ub_build write_volume || { fail perf_path/build "cannot build $UBENCH/write_volume"; done_tests; }
cd "$WORK" || exit 1

# the trace's metadata comes from a recording of /bin/true (the join needs it)
"$COMMREC" -q -f --keep-spool -o meta.zst -- /bin/true >/dev/null 2>&1
mkdir spool
cp meta.zst.spool/meta.zst spool/ 2>/dev/null || { fail perf_path/meta "no meta.zst from commrec"; done_tests; }

ev="1:0x1:0:0:500000:3"      # PERF_TYPE_SOFTWARE, task-clock, every 0.5 ms
env COMMTRACE_SPOOL="$WORK/spool" COMMTRACE_SAMPLER=pebs COMMTRACE_PMU_ATTRS="load:$ev,store:$ev" \
	COMMTRACE_PERIOD=500000 COMMTRACE_WATCHPOINTS=0 COMMTRACE_VERBOSE=2 \
	LD_PRELOAD="$CT_BUILD/libcommrec.so" "$UBENCH/write_volume" -t 2 -n 200000000 -s 0 \
	>wv.out 2>wv.err
if grep -q 'pebs: event 1 .* does not open' wv.err; then
	skip perf_path "software task-clock events do not open here: $(grep -m1 'does not open' wv.err)"
	done_tests
fi
"$COMMREC" -q -f --recover spool -o t.zst >rec.out 2>&1 ||
	{ fail perf_path/recover "$(head -c 300 rec.out)"; done_tests; }
"$COMMANALYZE" info t.zst >info 2>&1 || { fail perf_path/info "$(head -c 300 info)"; done_tests; }

# worker w's trace thread (thread_info w tid=N; the info table's tid column)
ok=1 why=
for w in 0 1; do
	tid=$(sed -n "s/^thread_info $w tid=\([0-9]*\).*/\1/p" wv.out)
	cpu=$(sed -n "s/^thread_info $w .*cpu_ms=\([0-9.]*\).*/\1/p" wv.out)
	sk=$(awk -v t="$tid" '$1 == "index" { for (i = 1; i <= NF; i++) if ($i == "skipped") c = i }
		c && $2 == t { print $c }' info)
	if [ -z "$tid" ] || [ -z "$sk" ] || [ "$sk" -lt 1 ]; then
		ok=0; why="$why worker $w (tid ${tid:-?}, ${cpu:-?} ms CPU): ${sk:-no} skipped samples;"
	fi
	echo "INFO perf_path: worker $w, ${cpu:-?} ms CPU, ${sk:-?} skipped samples"
done
[ $ok = 1 ] && pass perf_path/skips || fail perf_path/skips "$why $(tail -n 2 wv.err | tr '\n' '|')"
check perf_path/no-sample grep -Eq '^records: [0-9,]+, samples: 0$' info
nls=$(awk '/^ +not_load_store/ { print $2 }' info)
other=$(awk '/^skipped samples:/ { on = 1; next } on && /^ +[a-z_]+ +[0-9]+$/ { if ($1 != "not_load_store" && $1 != "runtime") n += $2; next } on { on = 0 } END { print n + 0 }' info)
check perf_path/reason [ "${nls:-0}" -gt 0 ] && [ "$other" -eq 0 ]
done_tests
