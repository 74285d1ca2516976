#!/usr/bin/env bash
# The kernels of tests/kernels/ (README.md there) recorded with the inst
# sampler (build/kernels/NAME-inst, built by commrec-cc):
#   kernels/exact_NAME     --sampler inst --full, --model exact: the kernel's
#                          pattern (ground truth; pattern.py --check: one
#                          line per sweep / iteration / buffer line on the
#                          pairs that must communicate, at most 1% (stencil,
#                          pipeline) or 1/3 (omp_reduce) of that elsewhere,
#                          all-to-all within 1/3 of the mean)
#   kernels/soft_wp_*      --sampler inst at the default options: the trace
#                          says its watchpoints were software ones, and they
#                          hit on this machine (debug registers need not fire)
#   kernels/soft_wp_rules_*  every hit is on a word its register watches in
#                          the thread's last arm, one hit per arm (line
#                          watches: a first hit and the overwrite of the
#                          publication's bytes), never on the thread's own
#                          publication (pattern.py --wp-check)
#   kernels/stencil_r      the sampled stencil at its default size (-t 4: 4096
#                          cells, 2000 sweeps; recorded with the line monitor,
#                          commrec's default, and analyzed with the owner
#                          estimator, commanalyze's default on such a trace)
#                          has events, all on neighbour pairs, and its Pearson
#                          r against exact, over the worker pairs, is at least
#                          r_min(n): the 99.9% bound of r when n events fall as
#                          Poisson counts on the three neighbour pairs
#                          (pattern.py r_min; above 0.9 from 126 events), n the
#                          report's effective events (T^2 / V: the number of
#                          equal-weight events with the estimate's relative
#                          variance).  exact's three pairs are equal although
#                          the edges differ (two on line boundaries, the third
#                          a line with 1 cell of worker 3): the owner estimator
#                          weighs transfers, so its pairs have one mean too
#   kernels/stencil_r_comdetective  the same check with the line monitor off
#                          (--owner-window 0: the comdetective estimator, the
#                          analysis's default without monitor records) at
#                          -c 4098, where every edge line holds 7 cells of the
#                          left worker and 1 of the right one: comdetective's
#                          events stand for the writer's stores, not the
#                          transfers, so only alike edges give its pairs one
#                          mean (at -c 4096 a sample lands on the third edge's
#                          line 1/8 as often in worker 3's stores, and that
#                          pair gets about half the events of the others)
#   (alltoall_pairs, omp_*, pipeline_ring: analyzed with --estimator
#   comdetective, whose events weigh one period each, which their bounds
#   count; the owner estimator's r is printed as INFO)
#   kernels/alltoall_pairs the sampled all-to-all reaches every pair of workers,
#                          each with mean +- 5 sqrt(mean) of the events per
#                          pair (a Poisson count falls outside with
#                          probability below 1e-6)
#   kernels/omp_master     the sampled OpenMP reduction puts most of its
#                          volume (> 1/2; exact: > 99%) on the master's pairs
#   kernels/omp_r          and its r against exact is at least the 99.9% bound
#                          of r when its events fall as Poisson counts on the
#                          pairs in proportion to exact's volumes (pattern.py
#                          --r-min-of, derived from the event count)
#   kernels/pipeline_ring  the sampled pipeline's directed matrix is the ring:
#                          off the ring (stages two apart, backwards) no more
#                          events than the 1e-6 Poisson tail of exact's share
#                          there (at least 1%; its mailboxes' synchronization
#                          puts 2-4% there), and no ring step without
#                          events (pattern.py --ring)
#   kernels/omp_objects    its top object is the program's own vector (the heap
#                          block main allocates in omp_reduce.c), not the
#                          OpenMP runtime's
#   kernels/watch_life_by_period  the default line watch life (CONFIG
#                          line_watch_life) is 16000 accesses over the period
# r and the event counts of every kernel are printed (INFO lines).  Sizes
# keep each run around a second on a loaded 2-core VM.
. "$(dirname "$0")/../lib.sh"

K="$CT_BUILD/kernels"
PAT="$CT_ROOT/tests/kernels/pattern.py"
for f in "$COMMREC" "$COMMANALYZE" "$K/stencil-inst" "$K/omp_reduce-inst" "$K/alltoall-inst" \
	"$K/pipeline-inst"; do
	if [ ! -x "$f" ]; then
		skip kernels "build $f first (make)"
		exit 0
	fi
done
command -v python3 >/dev/null || { skip kernels "needs python3"; exit 0; }

# The program carries the inst runtime: nothing to preload.
printf 'int ct_kernels_empty;\n' >"$WORK/empty.c"
gcc -shared -fPIC -o "$WORK/empty.so" "$WORK/empty.c" || { fail kernels_setup "empty.so"; done_tests; }
export COMMTRACE_RUNTIME="$WORK/empty.so"
unset COMMTRACE_SPOOL COMMTRACE_PID

# rec NAME KERNEL "ARGS" [commrec options]: $WORK/NAME.{zst,out,err}
rec() {
	local name=$1 k=$2 args=$3 rc=0; shift 3
	# shellcheck disable=SC2086
	"$COMMREC" -q -f -o "$WORK/$name.zst" "$@" -- "$K/$k-inst" $args \
		>"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
	[ $rc -eq 0 ] || { fail "$name" "exit $rc: $(head -c 300 "$WORK/$name.err")"; return 1; }
}
# csv NAME [model options]: $WORK/NAME.csv, the symmetric (or --directed) matrix
csv() {
	local name=$1; shift
	"$COMMANALYZE" matrix "$WORK/$name.zst" --format csv "$@" >"$WORK/$name.csv" 2>"$WORK/$name.aerr" ||
		{ fail "$name" "matrix: $(head -c 300 "$WORK/$name.aerr")"; return 1; }
}
# describe NAME [model options]: report (text and JSON) and info of NAME
# once: $WORK/NAME.report, NAME.json, NAME.info
describe() {
	local name=$1; shift
	"$COMMANALYZE" "$WORK/$name.zst" "$@" >"$WORK/$name.report" 2>&1
	"$COMMANALYZE" report "$WORK/$name.zst" --format json "$@" >"$WORK/$name.json" 2>/dev/null
	"$COMMANALYZE" info "$WORK/$name.zst" >"$WORK/$name.info" 2>&1
}
events() { sed -n 's/^ *communication events *\([0-9]*\).*/\1/p' "$WORK/$1.report"; }
# the report's effective events (T^2 / V), and its estimator
eff_events() {
	python3 -c 'import json, sys; print("%.0f" % (json.load(open(sys.argv[1]))["totals"]["effective_events"] or 0))' \
		"$WORK/$1.json" 2>/dev/null || echo 0
}
estimator() {
	python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["model"]; print(m["options"]["estimator"], m["estimator_source"])' \
		"$WORK/$1.json" 2>/dev/null
}
# stencil_r CHECK NAME EVENTS: the sampled stencil NAME's r against exact at
# least r_min(EVENTS), and nothing on pairs two apart
stencil_r() {
	local check=$1 name=$2 e=$3 r rmin far
	r=$(python3 "$PAT" --r "$WORK/$name.out" "$WORK/$name.csv" "$WORK/ex-stencil.out" "$WORK/ex-stencil.csv")
	rmin=$(python3 "$PAT" --r-min "${e:-0}" 3)
	far=$(python3 "$PAT" "$WORK/$name.out" "$WORK/$name.csv" |
		awk '$1 == "pair" && $3 > $2 + 1 { s += $4 } END { print s + 0 }')
	echo "INFO kernels/$name: $(events "$name") events ($e for the bound), r=$r against exact, estimator $(estimator "$name")"
	if python3 -c "import sys; sys.exit(0 if $r >= $rmin and ${e:-0} > 0 and $far == 0 else 1)"; then
		pass "$check"
	else
		fail "$check" "r=$r (at least $rmin: the 99.9% bound for $e events), $far on pairs two apart"
	fi
}
config() { sed -n "s/^ *$2=//p" "$WORK/$1.info"; }
# the wp_hit column of the info's thread table, summed
hits() { awk '$1 ~ /^[0-9]+$/ && NF >= 8 { h += $8 } END { print h + 0 }' "$WORK/$1.info"; }

#        kernel      args                      size for --check   directed
cases=("stencil     |-t 4                      |2000              |"
       "omp_reduce  |-t 4 -m 128 -i 100        |100               |"
       "alltoall    |-t 4 -k 16384 -r 10       |1                 |"
       "pipeline    |-t 4 -i 300 -l 256        |9600              |--directed")
for c in "${cases[@]}"; do
	IFS='|' read -r k args n dir <<<"$c"
	k=${k// /}; n=${n// /}; dir=${dir// /}
	args=$(echo "$args" | sed 's/ *$//')
	rec "ex-$k" "$k" "$args" --sampler inst --full || continue
	# the data pattern: without the accesses that libc's synchronization implies
	csv "ex-$k" --model exact --sync exclude $dir || continue
	if out=$(python3 "$PAT" --check "$k" "$WORK/ex-$k.out" "$WORK/ex-$k.csv" "$n"); then
		pass "kernels/exact_$k"
	else
		fail "kernels/exact_$k" "$out"
	fi
	# the exact matrices for r are symmetric
	[ -z "$dir" ] || csv "ex-$k" --model exact
done

# The stencil's barrier under exact: its object's traffic (the accesses that
# pthread_barrier_wait implies, flagged sync) reaches every pair of workers,
# which the data pattern above (nearest neighbours) does not.
if [ -f "$WORK/ex-stencil.zst" ] && cp "$WORK/ex-stencil.zst" "$WORK/sy-stencil.zst" &&
	csv sy-stencil --model exact --sync only --index thread; then
	check kernels/exact_stencil_sync_all_pairs python3 - "$WORK/sy-stencil.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
m = [[float(x) for x in r[1:]] for r in rows[1:]]
# workers are trace threads 1..4 (the main thread creates them in order)
sys.exit(0 if all(m[a][b] > 0 for a in range(1, 5) for b in range(1, 5) if a != b) else 1)
PY
fi

# Sampled, default options (software line watches and the line monitor,
# default period); the stencil at its default size, analyzed with the
# default estimator (owner: the trace has monitor records), the others with
# comdetective (their bounds count its events).
for c in "stencil|-t 4" "omp_reduce|-t 4 -m 128 -i 300" \
	"alltoall|-t 4 -k 16384 -r 10" "pipeline|-t 4 -i 300 -l 256"; do
	IFS='|' read -r k args <<<"$c"
	est=(--estimator comdetective)
	[ "$k" != stencil ] || est=()
	rec "s-$k" "$k" "$args" --sampler inst || continue
	csv "s-$k" "${est[@]}" || continue
	describe "s-$k" "${est[@]}"
	kind=$(config "s-$k" watchpoint_kind)
	h=$(hits "s-$k")
	if [ "$kind" = software ] && [ "$h" -gt 0 ]; then
		pass "kernels/soft_wp_$k"
	else
		fail "kernels/soft_wp_$k" "watchpoint_kind=$kind, $h hits"
	fi
	"$COMMANALYZE" dump --raw "$WORK/s-$k.zst" --type wp_arm,wp_hit >"$WORK/s-$k.wp"
	if out=$(python3 "$PAT" --wp-check "$WORK/s-$k.wp"); then
		pass "kernels/soft_wp_rules_$k"
	else
		fail "kernels/soft_wp_rules_$k" "$(echo "$out" | head -3)"
	fi
	r=$(python3 "$PAT" --r "$WORK/s-$k.out" "$WORK/s-$k.csv" "$WORK/ex-$k.out" "$WORK/ex-$k.csv")
	echo "INFO kernels/$k: sampled (default options) $(events "s-$k") events, $h watchpoint hits, r=$r against exact"
	if [ "$k" != stencil ] && cp "$WORK/s-$k.zst" "$WORK/o-$k.zst" && csv "o-$k"; then
		echo "INFO kernels/$k: the owner estimator (the default on this trace): r=$(python3 "$PAT" \
			--r "$WORK/s-$k.out" "$WORK/o-$k.csv" "$WORK/ex-$k.out" "$WORK/ex-$k.csv") against exact"
	fi
	case $k in
	stencil)
		check kernels/stencil_owner_default test "$(estimator "s-$k")" = "owner monitor"
		stencil_r kernels/stencil_r "s-$k" "$(eff_events "s-$k")" ;;
	alltoall)
		check "kernels/alltoall_pairs" python3 - "$PAT" "$WORK/s-$k.out" "$WORK/s-$k.csv" <<'PY'
import importlib.util, math, sys
spec = importlib.util.spec_from_file_location("pattern", sys.argv[1])
p = importlib.util.module_from_spec(spec)
spec.loader.exec_module(p)
m = p.matrix(sys.argv[2], sys.argv[3])
# the events of each pair: its volume over the period (every event weighs
# a sample's period, 1000 accesses)
n = [m[i][j] / 1000 for i, j in p.pairs(m)]
mean = sum(n) / len(n)
low, high = mean - 5 * math.sqrt(mean), mean + 5 * math.sqrt(mean)
print("pairs", n, "bounds", low, high)
sys.exit(0 if mean > 0 and low <= min(n) and max(n) <= high else 1)
PY
		;;
	omp_reduce)
		share=$(python3 - "$PAT" "$WORK/s-$k.out" "$WORK/s-$k.csv" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("pattern", sys.argv[1])
p = importlib.util.module_from_spec(spec)
spec.loader.exec_module(p)
m = p.matrix(sys.argv[2], sys.argv[3])
tot = sum(m[i][j] for i, j in p.pairs(m))
print("%.4f" % (sum(m[0][j] for j in range(1, len(m))) / tot if tot else 0))
PY
)
		check "kernels/omp_master" python3 -c "import sys; sys.exit(0 if $share > 0.5 else 1)"
		e=$(events "s-$k")
		rmin=$(python3 "$PAT" --r-min-of "${e:-0}" "$WORK/ex-$k.out" "$WORK/ex-$k.csv")
		if python3 -c "import sys; sys.exit(0 if $r >= $rmin and ${e:-0} > 0 else 1)"; then
			pass "kernels/omp_r"
		else
			fail "kernels/omp_r" "r=$r (at least $rmin: the 99.9% bound for $e events)"
		fi
		"$COMMANALYZE" objects "$WORK/s-$k.zst" --top 1 >"$WORK/s-$k.objects" 2>&1
		check "kernels/omp_objects" grep -q "allocated at: main (omp_reduce.c:[0-9]*)" "$WORK/s-$k.objects"
		echo "INFO kernels/omp_reduce: master pairs' share of the sampled volume $share" ;;
	pipeline)
		cp "$WORK/s-$k.zst" "$WORK/s-$k-dir.zst"
		# exact's share off the ring, synchronization included as in the
		# sampled trace (the stages' mailboxes put a few percent there)
		cp "$WORK/ex-$k.zst" "$WORK/ex-$k-dir.zst"
		if csv "s-$k-dir" --directed && csv "ex-$k-dir" --model exact --directed; then
			if out=$(python3 "$PAT" --ring "$(events "s-$k")" "$WORK/s-$k.out" "$WORK/s-$k-dir.csv" \
				"$WORK/ex-$k.out" "$WORK/ex-$k-dir.csv"); then
				pass "kernels/pipeline_ring"
			else
				fail "kernels/pipeline_ring" "$out"
			fi
		fi ;;
	esac
done

# The comdetective estimator on the stencil, where its events have one mean
# per pair (-c 4098), recorded without the line monitor: the analysis then
# picks comdetective itself.
if rec s-stencil-cd stencil "-t 4 -c 4098 -s 2000" --sampler inst --owner-window 0 &&
	csv s-stencil-cd; then
	describe s-stencil-cd
	check kernels/stencil_comdetective_default test "$(estimator s-stencil-cd)" = "comdetective default"
	stencil_r kernels/stencil_r_comdetective s-stencil-cd "$(events s-stencil-cd)"
fi

# The line watch life follows the period (16000 of the watcher's accesses):
# 16 samples at the default period, 64 at -c 250, 4 at -c 4000.
life=$(config s-stencil line_watch_life)
for c in 250 4000; do
	if rec "life-$c" stencil "-t 2 -c 256 -s 10" --sampler inst -c $c; then
		describe "life-$c"
		life="$life $(config "life-$c" line_watch_life)"
	fi
done
check kernels/watch_life_by_period test "$life" = "16 64 4"

# --period-multiplier cannot thin a trace with line watches: the report and
# the sweep say so at K > 1, and not at K = 1 (the comdetective estimator:
# the owner one, auto's on this monitor trace, ignores the multiplier).
if [ -f "$WORK/s-stencil.zst" ]; then
	CD=(--estimator comdetective)
	"$COMMANALYZE" report "$WORK/s-stencil.zst" "${CD[@]}" --period-multiplier 2 >"$WORK/k2.report" 2>&1
	"$COMMANALYZE" report "$WORK/s-stencil.zst" "${CD[@]}" --period-multiplier 1 >"$WORK/k1.report" 2>&1
	"$COMMANALYZE" sweep "$WORK/s-stencil.zst" "${CD[@]}" --param period-multiplier=1..3 >/dev/null \
		2>"$WORK/k.sweep.err"
	check kernels/period_multiplier_line_watches_warned \
		grep -q "period-multiplier 2 cannot stand for" "$WORK/k2.report"
	check kernels/period_multiplier_1_not_warned \
		bash -c "! grep -q 'cannot stand for' '$WORK/k1.report'"
	check kernels/period_multiplier_sweep_warned \
		grep -q "period-multiplier 3 cannot stand for" "$WORK/k.sweep.err"
fi
done_tests
