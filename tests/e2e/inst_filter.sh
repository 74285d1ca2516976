#!/usr/bin/env bash
# The full-mode filter (commrec --full; FORMAT.md, "Filtered full traces"):
# tests/inst/turns.c, whose threads take turns (the order of every access is
# fixed), recorded with --full (filtered) and --full=all:
#   - the exact matrices (all, true, false sharing; by thread) are the same
#     at every line size the filtered trace accepts (8 to 64 bytes when
#     recorded at --line-size 64), and the filter left accesses out
#   - the filtered trace carries its filter line; a line size outside the
#     accepted range and the emulate model are refused on it, accepted on
#     the unfiltered trace
#   - both made the same loads and stores, and every access of the filtered
#     one is a record, counted as left out (inst.full_filtered) or a load
#     whose record became its store's (inst.full_merged: turns.c's `+=` on
#     bytes and words; format version 7)
#   - turns.c's table, read by every thread: loads left out by the reader
#     rule too (inst.full_filtered_reads; format version 9)
#   - tests/inst/held.c: a load held back when its thread blocks for good
#     is in the trace (the writer writes it at the end)
. "$(dirname "$0")/../lib.sh"

INSTLIB=${COMMREC_INST_LIBDIR:-$CT_BUILD}
export COMMREC_INST_LIBDIR="$INSTLIB"
require inst_filter "$COMMREC" "$COMMANALYZE" "$INSTLIB/libcommrec-inst.so" gcc
printf 'int ct_inst_test_empty;\n' >"$WORK/empty.c"
gcc -shared -fPIC -o "$WORK/empty.so" "$WORK/empty.c" || { fail inst_filter_setup "empty.so"; done_tests; }
export COMMTRACE_RUNTIME="$WORK/empty.so"
unset COMMTRACE_SPOOL COMMTRACE_PID

if ! CC=gcc "$CT_ROOT/record/commrec-cc" -O1 -pthread "$CT_ROOT/tests/inst/turns.c" \
	-o "$WORK/turns" 2>"$WORK/cc.err"; then
	fail inst_filter_build "$(head -c 300 "$WORK/cc.err")"
	done_tests
fi

for mode in --full --full=all; do
	f="$WORK/t${mode#--full}.zst"
	if ! "$COMMREC" -q -f --line-size 64 -o "$f" --sampler inst "$mode" -- "$WORK/turns" 30 \
		>"$WORK/out" 2>"$WORK/err"; then
		fail "inst_filter_record$mode" "$(tail -c 300 "$WORK/err")"
		done_tests
	fi
done
F="$WORK/t.zst"
A="$WORK/t=all.zst"
# the same schedule without the accesses of the semaphores (sync)
COMMTRACE_INST_SYNC=0 "$COMMREC" -q -f --line-size 64 -o "$WORK/nosync.zst" --sampler inst --full=all \
	-- "$WORK/turns" 30 >"$WORK/out" 2>"$WORK/err" || fail inst_filter_record_nosync "$(tail -c 300 "$WORK/err")"

records() { "$COMMANALYZE" info "$1" | awk -F'[ ,]+' '/^records:/ {print $2; exit}'; }
nf=$(records "$F")
na=$(records "$A")
# each turn loads its window three times and stores it twice: far more
# than half of the accesses are repeats
check inst_filter_leaves_out test -n "$nf" -a -n "$na" -a "$((2 * nf))" -lt "${na:-0}"

same=1
for ls in 8 16 32 64; do
	for kind in all true false; do
		for t in F A; do
			"$COMMANALYZE" matrix "${!t}" --model exact --line-size "$ls" --kind "$kind" \
				--index thread --format csv 2>"$WORK/m.err" | sed 's/([0-9]*)//g' >"$WORK/$t.$ls.$kind.csv"
			[ "${PIPESTATUS[0]}" = 0 ] ||
				{ fail "inst_filter_matrix_$t.$ls.$kind" "$(head -c 300 "$WORK/m.err")"; same=0; }
		done
		if ! cmp -s "$WORK/F.$ls.$kind.csv" "$WORK/A.$ls.$kind.csv"; then
			fail "inst_filter_same_$ls.$kind" "$(diff "$WORK/F.$ls.$kind.csv" "$WORK/A.$ls.$kind.csv" | head -5 | tr '\n' '|')"
			same=0
		fi
	done
done
# the matrices are not empty (the thread ids in the labels were taken out): the threads do communicate
check inst_filter_matrix_nonempty awk -F, 'NR > 1 { for (i = 2; i <= NF; i++) s += $i } END { exit !(s > 100) }' \
	"$WORK/A.64.all.csv"
check inst_filter_same_exact_matrices test "$same" = 1

# sync: the semaphores' accesses are flagged; without them the data matrix
# is that of the recording that did not intercept them; alone, they are the
# handoff ring (main -> 1 -> 2 -> 3 -> 4 -> main)
exm() { "$COMMANALYZE" matrix "$1" --model exact --index thread --format csv "${@:2}" 2>&1 | sed 's/([0-9]*)//g'; }
check inst_sync_exclude_is_data cmp -s <(exm "$A" --sync exclude) <(exm "$WORK/nosync.zst")
check inst_sync_differs bash -c "! cmp -s <('$COMMANALYZE' matrix '$A' --model exact --format csv 2>&1 | sed 's/([0-9]*)//g') \
	<('$COMMANALYZE' matrix '$WORK/nosync.zst' --model exact --format csv 2>&1 | sed 's/([0-9]*)//g')"
exm "$A" --sync only --directed >"$WORK/only.csv"
check inst_sync_only_ring python3 - "$WORK/only.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
m = [[float(x) for x in r[1:]] for r in rows[1:]]
# row: receiver, column: sender (directed); thread i posts go[i+1]
ring = {(1, 0), (2, 1), (3, 2), (4, 3), (0, 4)}
ok = all(m[r][c] >= 30 for r, c in ring)   # one handoff per round, 30 rounds
sys.exit(0 if ok else 1)
PY

"$COMMANALYZE" info "$F" >"$WORK/info" 2>&1
"$COMMANALYZE" info "$A" >"$WORK/info.all" 2>&1
# the counts: the same accesses made (the schedule is fixed), and each one
# either a SAMPLE record, left out (inst.full_filtered) or merged into its
# store's record (inst.full_merged), in both traces
counts() { awk -F'[=:, ]+' '/^ *inst\.(loads|stores|full_filtered|full_merged|full_filtered_reads)=/ { print $2, $3 }
	/^records:/ { print "samples", $4 }' "$1"; }
counts "$WORK/info" >"$WORK/c.f"
counts "$WORK/info.all" >"$WORK/c.a"
v() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
kv_of() { awk -F= -v k="$2" '{ sub(/^ +/, "") } $1 == k { print $2; exit }' "$1"; }
check inst_filter_same_access_counts test -n "$(v "$WORK/c.f" inst.loads)" -a \
	"$(v "$WORK/c.f" inst.loads) $(v "$WORK/c.f" inst.stores)" = "$(v "$WORK/c.a" inst.loads) $(v "$WORK/c.a" inst.stores)"
check inst_filter_all_leaves_out_none test "$(v "$WORK/c.a" inst.full_filtered) $(v "$WORK/c.a" inst.full_merged)" = "0 0"
# turns.c's `+=` loads and stores the same bytes: with the filter, the
# load's record becomes the store's (the matrices above are still the same)
check inst_filter_merges test "$(v "$WORK/c.f" inst.full_merged)" -gt 0
# turns.c's table: a thread's loads of lines it read in an earlier turn,
# which other threads read since but nobody stored to, are left out (format
# version 9; the matrices above are still the same)
check inst_filter_reads_left_out test "$(v "$WORK/c.f" inst.full_filtered_reads)" -gt 0
check inst_filter_samples_plus_left_out test -n "$(v "$WORK/c.f" samples)" -a \
	"$(( $(v "$WORK/c.f" samples) + $(v "$WORK/c.f" inst.full_filtered) + $(v "$WORK/c.f" inst.full_merged) ))" = "$(v "$WORK/c.a" samples)"
# the line monitor beside --full sees every store but changes nothing of
# what the filter does: every access a record or left out, and far more
# than half left out (as without the monitor: the interleaving decides the
# exact split, so it may differ by a few accesses from the run above)
if "$COMMREC" -q -f --line-size 64 -o "$WORK/own.zst" --sampler inst --full --owner-window 16 -c 100 \
	-- "$WORK/turns" 30 >"$WORK/out" 2>"$WORK/err"; then
	"$COMMANALYZE" info "$WORK/own.zst" >"$WORK/info.own" 2>&1
	counts "$WORK/info.own" >"$WORK/c.o"
	so=$(v "$WORK/c.o" samples)
	check inst_filter_with_monitor_leaves_out test -n "$so" -a "$((2 * ${so:-0}))" -lt "$(v "$WORK/c.a" samples)" -a \
		"$(( ${so:-0} + $(v "$WORK/c.o" inst.full_filtered) ))" = "$(v "$WORK/c.a" samples)"
else
	fail inst_filter_record_with_monitor "$(tail -c 300 "$WORK/err")"
fi
# a held load (tests/inst/held.c): the worker's `+=` loads become its stores'
# records, and its last load, held back when it blocks for good, is written
# by the writer thread at the process's end
if CC=gcc "$CT_ROOT/record/commrec-cc" -O1 -pthread "$CT_ROOT/tests/inst/held.c" -o "$WORK/held" \
	2>"$WORK/cc.err" && "$COMMREC" -q -f --line-size 64 -o "$WORK/held.zst" --sampler inst --full \
	-- "$WORK/held" >"$WORK/held.out" 2>"$WORK/err"; then
	"$COMMANALYZE" info "$WORK/held.zst" >"$WORK/info.held" 2>&1
	check inst_filter_held_merges test "$(kv_of "$WORK/info.held" inst.full_merged)" -ge 4000
	last=$(cat "$WORK/held.out")
	check inst_filter_held_last_load bash -c "'$COMMANALYZE' dump --raw --type sample '$WORK/held.zst' |
		grep -q 'T1 sample .*addr=$last len=8 kind=load'"
else
	fail inst_filter_held_record "$(tail -c 300 "$WORK/cc.err" "$WORK/err")"
fi
check inst_filter_config grep -q '^ *full_filter_line=64$' "$WORK/info"
check inst_filter_feature grep -q '^format: version [0-9]* .*filtered' "$WORK/info"
for bad in 128 4; do
	check "inst_filter_refuses_line_$bad" bash -c "! '$COMMANALYZE' matrix '$F' --model exact --line-size $bad -o /dev/null 2>/dev/null"
done
check inst_filter_refusal_says_why bash -c "'$COMMANALYZE' matrix '$F' --model exact --line-size 128 -o /dev/null 2>&1 | grep -q 'full=all'"
check inst_filter_all_any_line "$COMMANALYZE" matrix "$A" --model exact --line-size 128 -o /dev/null
check inst_filter_refuses_emulate bash -c "! '$COMMANALYZE' report '$F' --model emulate >/dev/null 2>&1"
check inst_filter_all_emulate "$COMMANALYZE" report "$A" --model emulate -o /dev/null
done_tests
