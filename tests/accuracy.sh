#!/usr/bin/env bash
# `make accuracy`: the accuracy of the models on the microbenchmarks,
# against the ground truth (exact on a full trace).  Runs scripts/accuracy.sh
# (which builds the benchmarks with record/commrec-cc, records each one
# full, inst-sampled and soft, with every benchmark thread pinned to cpu i
# mod ncpus, and analyzes them; see its header), which regenerates
# doc/accuracy.md, and asserts on the metrics it writes (--tsv: BENCH METRIC
# VALUE).  Configurations: write_volume, false_sharing (f=0.5 and f=0.9),
# read_write and objects with 2 threads, p2p with 4; full traces 4M
# iterations per thread (10-20 MB each), inst-sampled 60M, soft the default
# length; on each full trace emulate with --estimator comdetective and
# owner, 10 seeds each; the four kernels (tests/kernels) full, with exact and
# emulate comdetective and owner, 10 seeds each.  ACCURACY_QUICK=1: soft half as long, and doc/accuracy.md is not
# rewritten.
#
# Not part of `make check`: these are measurements of estimators, and some
# bounds below are margins over what one machine showed ("seen: [min,
# max]": repeated runs on the 2-cpu development VM, AMD EPYC, no PMU,
# 2026-11-21, quiet).  On a loaded machine the threads run together less,
# the interleaving gets coarser and ComDetective's estimate drifts from
# exact's (emulate's volume ratio reached 3.4-7.3 under load): a failure
# here says how far, it is not a broken build.  What holds on every machine
# and schedule is checked in make check by tests/e2e/exact_invariants.sh.
. "$(dirname "$0")/lib.sh"

require accuracy "$COMMREC" "$COMMANALYZE" "$CT_BUILD/libcommrec-inst.so" "$CT_BUILD/libcommrec.so" python3 gcc
unset COMMTRACE_SPOOL COMMTRACE_PID COMMTRACE_RUNTIME

T=$WORK/acc.tsv
t0=$(date +%s)
mode=(-o "$CT_ROOT/doc/accuracy.md")
[ "${ACCURACY_QUICK:-0}" = 1 ] && mode=(--quick)
if ! B=$CT_BUILD "$CT_ROOT/scripts/accuracy.sh" "${mode[@]}" --tsv "$T" --keep "$WORK/acc" \
	>"$WORK/acc.out" 2>"$WORK/acc.err"; then
	fail accuracy/run "scripts/accuracy.sh failed: $(tail -c 600 "$WORK/acc.err" | tr '\n' '|')"
	done_tests
fi
pass accuracy/run
echo "INFO accuracy: $(($(date +%s) - t0)) s"
cat "$WORK/acc.out" "$WORK/acc.err"
sed 's/^/INFO /' "$T"

# within NAME ID METRIC LO HI: LO <= value <= HI (tests/lib.sh)
within() { tsv_within "$T" "$@"; }

ALL="write_volume false_sharing false_sharing_f0.9 read_write p2p objects"
WRITE_ONLY="write_volume false_sharing false_sharing_f0.9 p2p objects"

# ---- exact: what the benchmarks' own counts predict ------------------------------
for b in $ALL; do
	# Precondition: the workers ran at the same time.  Transfers per shared
	# access: seen [0.0093, 0.27] pinned; runs where the two threads took
	# turns on one cpu (unpinned) gave < 0.0001.  Not an accuracy bound: a
	# failure here means the measurement setup broke (pinning).
	within "accuracy/exact/$b/parallel" "$b" exact_per_access 0.002 1
	# Where the communication is: the cells the benchmark communicates in
	# (all-to-all: the worker pair; p2p: the pairs; read_write: reader <-
	# writer, directed) hold all of exact's volume but the startup and
	# teardown transfers (the main thread creating and joining the threads,
	# the runner's per-thread structs).  Those are a few dozen whatever the
	# length: seen share >= 0.9991 at 1M iterations, so >= 0.998.
	within "accuracy/exact/$b/expected_cells" "$b" exact_expected_share 0.998 1
	# Cells the benchmark never lets communicate (p2p: between pairs;
	# read_write: into the writer): exactly 0 in the benchmark's own data;
	# seen 0-1 (a runner struct line); a constant, so <= 8.
	within "accuracy/exact/$b/unexpected_cells" "$b" exact_unexpected 0 8
	# A transfer into a thread needs an access of that thread: at most its
	# shared accesses, plus the few startup transfers.
	within "accuracy/exact/$b/in_le_accesses" "$b" exact_in_over_accesses -1e12 8
done
for b in write_volume read_write p2p objects; do
	# true sharing only: one word per shared line (seen false <= 0.00036:
	# the runner's structs)
	within "accuracy/exact/$b/true_sharing" "$b" exact_false_frac 0 0.002
done
for b in $WRITE_ONLY; do
	# Lines that are only written (every access is a store or an atomic):
	# a transfer into a thread makes it the last writer and the next transfer
	# on that line takes the line from it, so with two threads per line the
	# two directions differ by at most 1 per line, whatever the schedule.
	# Seen <= 2 (the shared line plus a runner struct line); <= 4.
	within "accuracy/exact/$b/directions_alternate" "$b" exact_direction_asym 0 4
done
# false_sharing, 2 threads, every access an atomic add either to the
# thread's own word of the false line (probability f) or to the common word
# of the true line.  exact counts a transfer when the line's previous
# access was the other thread's: on each line the transfers are the
# alternations of its access sequence, all false on the false line, all
# true on the true line.  How many depends on the interleaving: with
# independent random interleaving the expected false share is exactly f;
# with strict alternation (ABAB...) it is f/(2-f) : (1-f)/(1+f), 0.94 at
# f=0.9; with coarse interleaving (long runs of one thread) each line
# changes hands once per switch whatever f: 0.5.  What holds for every
# schedule: at f=0.5 the two lines are exchangeable (the choice of line is
# independent of the timing), so the false share is 0.5 up to noise; its
# standard deviation with ~1e5 transfers is ~0.002 (seen [0.4988, 0.5018]):
# +-0.01.  At f=0.9: between 0.5 (coarse) and 0.94 (alternation); the
# pinned threads interleave finely (seen [0.856, 0.918]): [0.80, 0.95],
# which fails both for a detector that ignores f and for coarse runs.
within accuracy/exact/false_sharing/false_half false_sharing exact_false_frac 0.49 0.51
within accuracy/exact/false_sharing_f0.9/false_share false_sharing_f0.9 exact_false_frac 0.80 0.95

# ---- emulate (ComDetective on the same full trace, default period 10000) ------
# Total volume, emulate / exact, on the same execution: printed, not
# asserted.  ComDetective's weighting counts a detection for every access
# of its sampling period: it is biased, by how many times a thread touches
# a line between two transfers, which the schedule decides (quiet machine,
# 2026-11-21: ratio 0.51-2.09 over 11 runs x 6 configurations; loaded,
# 2026-11-23: 3.4-7.3).  No bound follows from the counts for a biased
# estimate, and one fitted to a machine fails on another (it did under
# load); the unbiased owner estimator's volume is asserted below, with
# bounds from its own variance.
for b in $ALL; do
	echo "INFO accuracy/emulate/$b/volume: emulate / exact = $(awk -F'\t' -v b="$b" \
		'$1 == b && $2 == "emulate_ratio" { print $3 }' "$T")"
	# the volume is where exact's is (seen 1.0 everywhere): no pairs
	# invented, nothing on the main thread, read_write's direction right
	within "accuracy/emulate/$b/expected_cells" "$b" emulate_expected_share 0.99 1
done
# p2p: the two heaviest pairs are the benchmark's pairs (seen 1.0)
within accuracy/emulate/p2p/pairs p2p emulate_topk 1 1

# ---- inst-sampled and soft recordings: the pattern ------------------------------
# Other executions than the full one: only the pattern compares (volumes
# per access differ with the interleaving, soft weights are CPU time).
for s in inst soft; do
	for b in $ALL; do
		# all the detected volume in the cells exact has it in (seen 1.0):
		# >= 0.99
		within "accuracy/$s/$b/expected_cells" "$b" ${s}_expected_share 0.99 1
	done
	within "accuracy/$s/p2p/pairs" p2p ${s}_topk 1 1
	# p2p, correlation of the 10 symmetric cells (main thread included)
	# with exact's.  Seen: inst [0.77, 1.0] (11 runs), soft [0.986, 0.998]
	# (3 runs at p2p's default length; [0.57, 1.0] in 8 runs at half of it,
	# hence the default length in --quick too).  The
	# low values come from the balance between the two pairs (how long each
	# pair's threads ran at the same time differs between executions):
	# exact 1:1 against a recording's 1:4 still gives 0.83, opposite
	# imbalances 2:1 against 1:2 give 0.76 and 3:1 against 1:3 give 0.52.
	# Bound 0.5: it tolerates any balance the scheduler can make up to 3:1
	# each way, while a detector that spread the volume uniformly over the
	# six worker pairs (no pair structure) would score 0.41 (and fail the
	# expected_cells and pairs tests above).
	within "accuracy/$s/p2p/pearson" p2p ${s}_pearson 0.5 1
done
# inst: the false share follows f.  At f=0.5 the two lines are
# exchangeable for the program whatever the schedule (not quite for the
# runtime, below): 0.5 up to noise (~100 detections per run: binomial sd
# ~0.05), 0.35-0.65.
# At f=0.9 comdetective's split is not asserted: it is not exact's in
# expectation (the issue's complaint), and no bound follows for it from the
# counts.  Seen: 0.81-0.93 on a quiet machine (2026-11-21); 0.37-0.80 over
# 10 recordings at load 5-13 (2026-11-24), and on 6 of them, recorded with
# the line monitor too, 0.38-0.71 (90% intervals [0.33, 0.47] and
# [0.40, 0.51] in two) against the owner estimator's 0.87-0.93 on the same
# recordings: below 0.5, where exact's split cannot be in any execution.
# Instead the owner estimator's split on the inst recording with the line
# monitor (unbiased for the execution as monitored) is asserted: at f=0.5
# in the same band as comdetective's (seen 0.50-0.58 in 7 recordings: the
# runtime does not treat the two lines alike, a line watch on the common
# word ends at the watcher's first store to it, one on the other thread's
# word lives on, so the recorded execution need not be exchangeable); at
# f=0.9 where exact's can be in any execution, 0.5-0.94 (above), within
# 4.42 of its standard errors (two-sided 1e-5; the standard error from its
# reported 90% interval).
within accuracy/inst/false_sharing/false_half false_sharing inst_false_frac 0.35 0.65
echo "INFO accuracy/inst/false_sharing_f0.9/false_share: comdetective $(awk -F'\t' \
	'$1 == "false_sharing_f0.9" && $2 == "inst_false_frac" { print $3 }' "$T")"
within accuracy/inst_owner/false_sharing/false_half false_sharing iown_owner_false_frac 0.35 0.65
within accuracy/inst_owner/false_sharing_f0.9/false_share false_sharing_f0.9 iown_owner_false_z -4.42 4.42

# ---- the owner estimator (emulate --estimator owner, SEEDS=10 draws) ----------
# owner: --owner-window 64 N (the default), owner_j1: 1, owner_fine: N = 1000.
# Its 90% interval holds exact's volume in a run with probability at least
# ~0.9 (Fay and Feuer's gamma interval with the allowance for one unsampled
# access, analyze/interval.c: it keeps its level, conservatively); out of 10
# independent draws, P(fewer than 5) = 1.5e-4 at 0.9, 0.05 at 0.7: >= 5,
# at N = 1000 and at the default N = 10000.  Not asserted: "within 15%"
# (sampling error, see doc/accuracy.md), nor the line monitor's estimate
# on the full trace against exact (one draw each, and the monitor's lock
# changes how the threads interleave while a line is monitored: no bound
# follows from the counts for that part, doc/accuracy.md).
for b in $ALL; do
	within "accuracy/owner/$b/coverage" "$b" owner_covered 5 10
	within "accuracy/owner_j1/$b/coverage" "$b" owner_j1_covered 5 10
	within "accuracy/owner_fine/$b/coverage" "$b" owner_fine_covered 5 10
	# Unbiased: the mean of the 10 independent estimates is exact's volume
	# up to its standard error, sqrt(mean variance estimate / 10) (the
	# variance estimator is unbiased too): |z| <= 4.42, two-sided 1e-5 of a
	# normal (a mean of 10 runs of tens of events each: near normal).
	for e in owner owner_j1 owner_fine; do
		within "accuracy/$e/$b/unbiased" "$b" ${e}_mean_z -4.42 4.42
	done
done
# The kernels (stencil, omp_reduce, alltoall, pipeline; owner at the
# default window and comdetective, SEEDS draws each): the same two bounds,
# derived the same way, for the owner estimator.
for k in stencil omp_reduce alltoall pipeline; do
	within "accuracy/owner/$k/coverage" "$k" owner_covered 5 10
	within "accuracy/owner/$k/unbiased" "$k" owner_mean_z -4.42 4.42
done

done_tests
