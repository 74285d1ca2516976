#!/usr/bin/env bash
# The bundled example traces (datasets/*.zst): each opens, is complete, is
# described in datasets/README.md (with its checksum), analyzes to the pattern
# the README claims, and analyzes to identical output twice (determinism) and
# with 1, 2 and 4 decoding threads (-j; at -j2 the merging thread runs
# the model).
. "$(dirname "$0")/../lib.sh"

DS="$CT_ROOT/datasets"
if [ ! -x "$COMMANALYZE" ]; then
	skip datasets "build first ($COMMANALYZE)"
	exit 0
fi
shopt -s nullglob
traces=("$DS"/*.zst)
if [ ${#traces[@]} = 0 ]; then
	skip datasets "no datasets/*.zst"
	exit 0
fi

# cell I J of a CSV matrix (row 0 / column 0 are the labels)
cell() { awk -F, -v i="$2" -v j="$3" 'NR == i + 2 { print $(j + 2) + 0 }' "$1"; }
# sum of the off-diagonal cells of a CSV matrix
offdiag_sum() { awk -F, 'NR > 1 { for (c = 2; c <= NF; c++) if (c - 2 != NR - 2) s += $c } END { print s + 0 }' "$1"; }

for t in "${traces[@]}"; do
	n=$(basename "$t" .zst)

	# ---- opens, complete, documented --------------------------------------
	"$COMMANALYZE" info "$t" >"$WORK/$n.info" 2>"$WORK/$n.err"
	check "$n/info_opens" test $? -eq 0
	check "$n/complete" grep -q '^complete: yes' "$WORK/$n.info"
	check "$n/symbols_embedded" grep -q '^format:.*symbols' "$WORK/$n.info"
	check "$n/in_readme" grep -q "^## $n.zst" "$DS/README.md"
	sum=$(sha256sum "$t" | cut -d' ' -f1)
	check "$n/readme_checksum" grep -q "$sum  $n.zst" "$DS/README.md"

	# ---- determinism: every view twice, sweep with 1 and 2 workers --------
	ok=1
	for run in 1 2; do
		{
			"$COMMANALYZE" "$t"
			"$COMMANALYZE" info "$t"
			"$COMMANALYZE" matrix "$t" --format csv
			"$COMMANALYZE" matrix "$t" --kind false --index core --format json
			"$COMMANALYZE" objects "$t" --top 0
			"$COMMANALYZE" lines "$t" --top 0
			"$COMMANALYZE" dump "$t" --limit 2000
		} >"$WORK/$n.run$run" 2>&1 || ok=0
		"$COMMANALYZE" sweep "$t" -p board-size=1,7,127 -p period-multiplier=1,2,4 -j "$run" \
			-q --no-progress --csv "$WORK/$n.sweep$run.csv" 2>/dev/null || ok=0
	done
	check "$n/views_exit_0" test "$ok" = 1
	check "$n/deterministic" cmp -s "$WORK/$n.run1" "$WORK/$n.run2"
	check "$n/sweep_deterministic" cmp -s "$WORK/$n.sweep1.csv" "$WORK/$n.sweep2.csv"

	# ---- parallel decoding: -j1, -j2 and -j4 give the same bytes, every model --
	for m in comdetective exact window signature emulate; do
		for j in 1 2 4; do
			{
				"$COMMANALYZE" "$t" --model "$m" -j "$j"
				"$COMMANALYZE" matrix "$t" --model "$m" --format json -j "$j"
				"$COMMANALYZE" objects "$t" --model "$m" --top 0 -j "$j"
				"$COMMANALYZE" lines "$t" --model "$m" --top 0 -j "$j"
			} >"$WORK/$n.$m.j$j" 2>&1
		done
		check "$n/jobs_identical_$m" cmp -s "$WORK/$n.$m.j1" "$WORK/$n.$m.j4"
		check "$n/jobs2_identical_$m" cmp -s "$WORK/$n.$m.j1" "$WORK/$n.$m.j2"
	done

	"$COMMANALYZE" matrix "$t" --format csv >"$WORK/$n.all.csv" 2>/dev/null
	"$COMMANALYZE" matrix "$t" --kind true --format csv >"$WORK/$n.true.csv" 2>/dev/null
	"$COMMANALYZE" matrix "$t" --kind false --format csv >"$WORK/$n.false.csv" 2>/dev/null
	"$COMMANALYZE" objects "$t" --format csv >"$WORK/$n.obj.csv" 2>/dev/null
	"$COMMANALYZE" "$t" >"$WORK/$n.report" 2>/dev/null
	check "$n/report_no_few_samples_warning" sh -c "! grep -q 'fewer than 100 samples' '$WORK/$n.report'"

	# ---- the pattern its README claims -------------------------------------
	case "$n" in
	p2p-*)
		a=$(cell "$WORK/$n.all.csv" 1 2) b=$(cell "$WORK/$n.all.csv" 3 4)
		tot=$(offdiag_sum "$WORK/$n.all.csv")
		check "$n/pair_0_1_nonzero" test "$a" -gt 0
		check "$n/pair_2_3_nonzero" test "$b" -gt 0
		# symmetric matrix: each pair counted twice in the off-diagonal sum
		check "$n/only_pair_cells" test "$tot" -eq $((2 * (a + b)))
		check "$n/no_false_sharing" test "$(offdiag_sum "$WORK/$n.false.csv")" -eq 0
		check "$n/top_object_pair_line" awk -F, 'NR == 2 { exit !($2 == "pair_line") }' "$WORK/$n.obj.csv"
		check "$n/fields_by_pair" awk -F, 'NR == 2 { exit !(index($0, "pair_line[0].w[0]@0:T1,T2") && index($0, "pair_line[1].w[0]@128:T3,T4")) }' "$WORK/$n.obj.csv"
		;;
	false_sharing-*)
		f=$(offdiag_sum "$WORK/$n.false.csv") tr=$(offdiag_sum "$WORK/$n.true.csv")
		check "$n/false_gt_true" test "$f" -gt "$tr"
		ok=1
		for i in 1 2 3; do
			for j in $(seq $((i + 1)) 4); do
				[ "$(cell "$WORK/$n.all.csv" "$i" "$j")" -gt 0 ] || ok=0
			done
		done
		check "$n/all_to_all" test "$ok" = 1
		check "$n/main_thread_silent" test "$(awk -F, 'NR == 2 { for (c = 2; c <= NF; c++) s += $c } END { print s + 0 }' "$WORK/$n.all.csv")" -eq 0
		# rank 1: false_line, all of it false; rank 2: true_line, all of it true
		check "$n/top_object_false_line" awk -F, 'NR == 2 { exit !($2 == "false_line" && $6 > 0 && $6 == $8 && $7 == 0) }' "$WORK/$n.obj.csv"
		check "$n/second_object_true_line" awk -F, 'NR == 3 { exit !($2 == "true_line" && $6 > 0 && $6 == $7 && $8 == 0) }' "$WORK/$n.obj.csv"
		check "$n/one_writer_per_field" grep -q 'false_line.w\[0\]@0:T1;false_line.w\[1\]@8:T2;false_line.w\[2\]@16:T3;false_line.w\[3\]@24:T4' "$WORK/$n.obj.csv"
		check "$n/objects_names_false_sharing" sh -c "'$COMMANALYZE' objects '$t' | grep -q 'false sharing between false_line.w\[0\] (offset 0, written by T1) and false_line.w\[1\]'"
		;;
	*)
		skip "$n/pattern" "no pattern check for this trace (add one to tests/e2e/datasets.sh)"
		;;
	esac
done
done_tests
