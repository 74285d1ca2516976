#!/usr/bin/env bash
# End-to-end: `commanalyze functions` and readable names on programs
# recorded exactly (`commrec --sampler inst --full`, deterministic on any
# machine: no sampling, no watchpoints):
#   functions/pipeline_*  tests/functions/pipeline.c (three stages in three
#                         threads, a barrier between stages): the two flows
#                         stage1 -> stage2 and stage2 -> stage3, unique bytes
#                         = buffer size x rounds on both, total bytes of the
#                         second = 2 x unique (stage3 reads its buffer twice);
#                         the DOT graph renders with dot -Tsvg when installed
#   functions/cxx_*       tests/functions/grid.cpp: demangled names in the
#                         functions, objects and lines views and in the heap
#                         call paths; --no-demangle gives the raw names
. "$(dirname "$0")/../lib.sh"

CC_WRAP="$CT_ROOT/record/commrec-cc"
export COMMREC_INST_LIBDIR=${COMMREC_INST_LIBDIR:-$CT_BUILD}
for f in "$COMMREC" "$COMMANALYZE" "$COMMREC_INST_LIBDIR/libcommrec-inst.so"; do
	if [ ! -e "$f" ]; then
		skip functions "build $f first (make)"
		done_tests
	fi
done
unset COMMTRACE_SPOOL COMMTRACE_PID

BUF=256 ROUNDS=5
# csv_row FILE PRODUCER CONSUMER: the CSV row of that flow (merged threads)
csv_row() { awk -F, -v p="$2" -v c="$3" '$2 == p && $3 == c' "$1"; }
col() { echo "$1" | cut -d, -f"$2"; }

if ! command -v cc >/dev/null; then
	skip functions_pipeline "cc not found"
elif ! "$CC_WRAP" -O1 -pthread "$CT_ROOT/tests/functions/pipeline.c" -o "$WORK/pipeline" \
		2>"$WORK/pcc.err"; then
	fail functions_pipeline_build "$(head -c 300 "$WORK/pcc.err")"
elif ! "$COMMREC" -q -f -o "$WORK/p.zst" --sampler inst --full=all -- "$WORK/pipeline" "$ROUNDS" \
		>"$WORK/p.out" 2>"$WORK/p.err"; then
	fail functions_pipeline_record "$(head -c 300 "$WORK/p.err")"
else
	"$COMMANALYZE" functions "$WORK/p.zst" --model exact --format csv --top 0 -o "$WORK/p.csv" \
		2>"$WORK/pa.err" || fail functions_pipeline_analyze "$(head -c 300 "$WORK/pa.err")"
	r12=$(csv_row "$WORK/p.csv" stage1 stage2)
	r23=$(csv_row "$WORK/p.csv" stage2 stage3)
	# columns: 10 bytes, 11 unique, 12 cross-thread bytes
	check functions_pipeline_edge12_unique test "$(col "$r12" 11)" = $((BUF * ROUNDS))
	check functions_pipeline_edge12_bytes test "$(col "$r12" 10)" = $((BUF * ROUNDS))
	check functions_pipeline_edge12_cross test "$(col "$r12" 12)" = $((BUF * ROUNDS))
	check functions_pipeline_edge23_unique test "$(col "$r23" 11)" = $((BUF * ROUNDS))
	check functions_pipeline_edge23_bytes test "$(col "$r23" 10)" = $((2 * BUF * ROUNDS))
	# no flow between the stages other than these two
	check functions_pipeline_no_edge13 test -z "$(csv_row "$WORK/p.csv" stage1 stage3)"
	check functions_pipeline_no_edge21 test -z "$(csv_row "$WORK/p.csv" stage2 stage1)"
	# the exact model's transfers on both edges (one per line per round at least)
	check functions_pipeline_transfers test "$(col "$r12" 6)" -ge "$ROUNDS"
	"$COMMANALYZE" functions "$WORK/p.zst" --model exact --format dot -o "$WORK/p.dot" \
		2>>"$WORK/pa.err"
	check functions_pipeline_dot grep -q 'label="stage1' "$WORK/p.dot"
	if command -v dot >/dev/null; then
		check functions_pipeline_dot_renders dot -Tsvg -o "$WORK/p.svg" "$WORK/p.dot"
	else
		skip functions_pipeline_dot_renders "Graphviz dot not installed"
	fi
fi

if ! command -v g++ >/dev/null; then
	skip functions_cxx "g++ not found"
elif ! CC=g++ "$CC_WRAP" -O1 -pthread "$CT_ROOT/tests/functions/grid.cpp" -o "$WORK/grid" \
		2>"$WORK/gcc.err"; then
	fail functions_cxx_build "$(head -c 300 "$WORK/gcc.err")"
elif ! "$COMMREC" -q -f -o "$WORK/g.zst" --sampler inst --full=all -- "$WORK/grid" \
		>"$WORK/g.out" 2>"$WORK/g.err"; then
	fail functions_cxx_record "$(head -c 300 "$WORK/g.err")"
else
	for view in functions objects lines; do
		"$COMMANALYZE" "$view" "$WORK/g.zst" --model exact --top 0 >"$WORK/g.$view" \
			2>"$WORK/g.$view.err" || fail "functions_cxx_$view" "$(head -c 300 "$WORK/g.$view.err")"
		check "functions_cxx_${view}_no_mangled" bash -c "! grep -q '_Z[A-Z0-9]' '$WORK/g.$view'"
		"$COMMANALYZE" "$view" "$WORK/g.zst" --model exact --top 0 --no-demangle \
			>"$WORK/g.$view.raw" 2>/dev/null
		check "functions_cxx_${view}_raw" grep -q '_ZN7physics4Grid' "$WORK/g.$view.raw"
	done
	check functions_cxx_flow grep -q 'physics::Grid::fill(int) -> physics::Grid::total() const' \
		"$WORK/g.functions"
	check functions_cxx_heap grep -q 'heap:physics::Grid::create(int)' "$WORK/g.objects"
	check functions_cxx_lines grep -q 'physics::Grid::fill(int)' "$WORK/g.lines"
fi
done_tests
