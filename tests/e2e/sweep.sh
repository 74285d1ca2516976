#!/usr/bin/env bash
# commanalyze sweep end to end: every point of a sweep equals
# `commanalyze matrix --directed` with the same options, cell for cell;
# -j 1 and -j 4 give the same files; CSV, table, plot and HDF5 are
# well-formed; bad arguments and damaged traces fail cleanly; the MPI
# variant (when built) gives the same results as one process.
. "$(dirname "$0")/../lib.sh"

MKTRACE="$CT_BUILD/tests/ana_mktrace"
MPIBIN="$CT_BUILD/commanalyze-mpi"

if [ ! -x "$COMMANALYZE" ] || [ ! -x "$MKTRACE" ]; then
	skip sweep "build first ($COMMANALYZE, $MKTRACE)"
	exit 0
fi
if ! "$COMMANALYZE" sweep --help 2>&1 | grep -q "^usage: commanalyze sweep"; then
	skip sweep "commanalyze has no sweep command"
	exit 0
fi

T="$WORK/t.zst"
"$MKTRACE" "$T" big 200000 || { fail mktrace "ana_mktrace big"; done_tests; }

have_py=0
command -v python3 >/dev/null && have_py=1
have_h5=0
command -v h5dump >/dev/null && "$COMMANALYZE" sweep "$T" --param board-size=5 -q -o "$WORK/probe.h5" \
	2>/dev/null && have_h5=1

# ---- every point equals the single analysis ------------------------------------
"$COMMANALYZE" sweep "$T" --param board-size=5,127 --param period-multiplier=1,3 \
	--param hash=mod,murmur --expiry ns:20000 --directed -j 2 -q -o "$WORK/s.h5" \
	--csv "$WORK/s.csv" 2>"$WORK/err"
rc=$?
check exit_0 test "$rc" -eq 0
if [ "$have_h5" = 1 ] && [ "$have_py" = 1 ]; then
	ok=1
	p=0
	for b in 5 127; do
		for k in 1 3; do
			for h in mod murmur; do
				for ix in thread core; do
					"$COMMANALYZE" matrix "$T" --format csv --directed --index $ix --board-size $b \
						--period-multiplier $k --hash $h --expiry ns:20000 >"$WORK/m.csv" 2>/dev/null
					h5dump -m %.17g -y -w 0 -d "/points/$(printf %04d $p)/${ix}_all" \
						-o "$WORK/d.txt" "$WORK/s.h5" >/dev/null
					python3 - "$WORK/m.csv" "$WORK/d.txt" <<'EOF' || ok=0
import sys
m = [float(x) for line in open(sys.argv[1]).read().splitlines()[1:] for x in line.split(",")[1:]]
d = [float(x) for x in open(sys.argv[2]).read().replace(",", " ").split()]
if m != d:
    print("# cells differ:", sys.argv[1], len(m), len(d))
    sys.exit(1)
EOF
				done
				p=$((p + 1))
			done
		done
	done
	check points_equal_matrix test "$ok" = 1
else
	skip points_equal_matrix "needs h5dump and python3 (and an HDF5 build)"
fi

# ---- every model, kind and index: a point equals `matrix` with its options -------
# (symmetric M + M^T, as both write by default), on the generated trace and on a
# recorded one with watchpoint hits
cells_equal() {
	python3 - "$1" "$2" <<'EOF'
import sys
m = [float(x) for line in open(sys.argv[1]).read().splitlines()[1:] for x in line.split(",")[1:]]
d = [float(x) for x in open(sys.argv[2]).read().replace(",", " ").split()]
if m != d:
    print("# cells differ:", sys.argv[1], len(m), len(d))
    sys.exit(1)
EOF
}
if [ "$have_h5" = 1 ] && [ "$have_py" = 1 ]; then
	models=(comdetective window exact signature emulate)
	for tr in "$T" "$CT_ROOT/datasets/false_sharing-4t-f0.9.zst"; do
		n=$(basename "$tr" .zst)
		ok=1
		"$COMMANALYZE" sweep "$tr" --param model=$(IFS=,; echo "${models[*]}") --emulate-period 3 \
			--board-size 31 -q -o "$WORK/m.h5" 2>/dev/null || ok=0
		for p in 0 1 2 3 4; do
			for ix in thread core; do
				for k in all true false; do
					"$COMMANALYZE" matrix "$tr" --format csv --model "${models[$p]}" --kind $k \
						--index $ix --emulate-period 3 --board-size 31 >"$WORK/m.csv" 2>/dev/null
					h5dump -m %.17g -y -w 0 -d "/points/$(printf %04d $p)/${ix}_$k" \
						-o "$WORK/d.txt" "$WORK/m.h5" >/dev/null
					cells_equal "$WORK/m.csv" "$WORK/d.txt" || ok=0
				done
			done
		done
		check "models_equal_matrix/$n" test "$ok" = 1
	done
else
	skip models_equal_matrix "needs h5dump and python3 (and an HDF5 build)"
fi

# ---- -j 1 and -j 4: same results ------------------------------------------------
"$COMMANALYZE" sweep "$T" --param board-size=3,17,127 --param period-multiplier=1..4 \
	--param expiry=comdetective,samples:2 -j 1 -q --csv "$WORK/j1.csv" -o "$WORK/j1.h5" 2>/dev/null
"$COMMANALYZE" sweep "$T" --param board-size=3,17,127 --param period-multiplier=1..4 \
	--param expiry=comdetective,samples:2 -j 4 -q --csv "$WORK/j4.csv" -o "$WORK/j4.h5" 2>/dev/null
check jobs_csv_identical cmp -s "$WORK/j1.csv" "$WORK/j4.csv"
if [ "$have_h5" = 1 ]; then
	strip() { h5dump "$1" | sed -e '1d' -e '/"replay_seconds"/,/^      }/d'; }
	check jobs_h5_identical cmp -s <(strip "$WORK/j1.h5") <(strip "$WORK/j4.h5")
else
	skip jobs_h5_identical "no h5dump or no HDF5"
fi
check csv_rows test "$(wc -l <"$WORK/j1.csv")" -eq 25

# ---- table, plot -----------------------------------------------------------------
"$COMMANALYZE" sweep "$T" --param board-size=5,17,31,61,127 --param hash=mod,murmur \
	--plot "$WORK/p.svg" >"$WORK/table.txt" 2>/dev/null
check table_has_reference grep -q '^ *8\* ' "$WORK/table.txt"
check table_has_header grep -q 'board-size.*hash.*volume.*pearson' "$WORK/table.txt"
if [ "$have_py" = 1 ]; then
	check plot_well_formed python3 -c "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); \
assert d.documentElement.tagName == 'svg'; assert len(d.getElementsByTagName('polyline')) >= 6" "$WORK/p.svg"
else
	check plot_well_formed grep -q '</svg>' "$WORK/p.svg"
fi
"$COMMANALYZE" sweep "$T" --param expiry=comdetective,ns:1000,samples:3 -q --plot "$WORK/c.svg" 2>/dev/null
check plot_categorical grep -q '>samples:3<' "$WORK/c.svg"

# ---- reference: a point off the grid, another trace --------------------------------
"$COMMANALYZE" sweep "$T" --param board-size=5,17 --reference board-size=1021 \
	--csv "$WORK/r.csv" >"$WORK/r.txt" 2>/dev/null
check reference_off_grid grep -q 'off-grid point board-size=1021' "$WORK/r.txt"
"$COMMANALYZE" sweep "$T" --param board-size=5,127 --reference "$T" --reference-model comdetective \
	--board-size 127 --csv "$WORK/rt.csv" -q 2>/dev/null
# the point with board-size 127 is the reference trace's own analysis: L1 0
check reference_trace awk -F, 'NR == 3 && $4 + 0 > 0 && $10 == 0 { ok = 1 } END { exit !ok }' "$WORK/rt.csv"

# --reference-model M without --reference TRACE: the same trace analyzed with M
# (here exact: off the grid, replayed in the same pass); the distances equal
# those against `--reference TRACE --reference-model exact`
"$COMMANALYZE" sweep "$T" --param board-size=5,127 --reference-model exact --csv "$WORK/rm.csv" \
	>"$WORK/rm.txt" 2>"$WORK/rm.err"
check reference_model_exit test $? -eq 0
check reference_model_desc grep -q 'off-grid point model=exact' "$WORK/rm.txt"
"$COMMANALYZE" sweep "$T" --param board-size=5,127 --reference "$T" --reference-model exact \
	--csv "$WORK/rmt.csv" -q 2>/dev/null
check reference_model_same_trace cmp -s <(cut -d, -f1-17 "$WORK/rm.csv") <(cut -d, -f1-17 "$WORK/rmt.csv")
check reference_model_l1_nonzero awk -F, 'NR == 2 && $10 + 0 > 0 { ok = 1 } END { exit !ok }' "$WORK/rm.csv"
# the trace is sampled: exact is not ground truth, and says so once
check reference_model_sampled_warning test "$(grep -c 'exact model needs a full trace' "$WORK/rm.err")" -eq 1
# a model the grid already has: that grid point
"$COMMANALYZE" sweep "$T" --param board-size=5,127 --reference-model comdetective >"$WORK/rc.txt" 2>/dev/null
check reference_model_on_grid grep -q '^ *1\* ' "$WORK/rc.txt"
"$COMMANALYZE" sweep "$T" --param board-size=5 --reference-model oracle -q >/dev/null 2>"$WORK/e0"
check reference_model_unknown test $? -eq 1
check reference_model_unknown_message grep -q "unknown model 'oracle'" "$WORK/e0"

# ---- a hostile trace: a thread index far beyond the thread count is refused
# before any matrix is sized by it (exit 2, one line naming the file)
if [ "$have_py" = 1 ]; then
	python3 - "$T" "$WORK/hostile.zst" <<'EOF'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
# THREAD sections: "CTRC", kind 2, flags; the u32 index follows
pos = [i for i in range(len(d) - 6) if d[i:i + 6] == b"CTRC\x02\x00"]
struct.pack_into("<I", d, pos[-1] + 8, 60000)
open(sys.argv[2], "wb").write(d)
EOF
	"$COMMANALYZE" sweep "$WORK/hostile.zst" --param board-size=5,127 -q >/dev/null 2>"$WORK/eh"
	check hostile_thread_index_exit test $? -eq 2
	check hostile_thread_index_message grep -q "hostile.zst: thread index 60000 with only 4 threads" "$WORK/eh"
	check hostile_thread_index_one_line test "$(wc -l <"$WORK/eh")" -eq 1
else
	skip hostile_thread_index "needs python3"
fi

# ---- errors -----------------------------------------------------------------------
"$COMMANALYZE" sweep "$T" --param bogus=1,2 -q >/dev/null 2>"$WORK/e1"
check bad_param_name test $? -eq 1
check bad_param_message grep -q "unknown model option 'bogus'" "$WORK/e1"
"$COMMANALYZE" sweep "$T" --param hash=mod,sha1 -q >/dev/null 2>&1
check bad_param_value test $? -eq 1
"$COMMANALYZE" sweep "$T" --param board-size=9..1 -q >/dev/null 2>&1
check bad_range test $? -eq 1
"$COMMANALYZE" sweep "$WORK/missing.zst" --param board-size=5 -q >/dev/null 2>&1
check missing_trace test $? -eq 2
head -c $(( $(stat -c %s "$T") / 2 )) "$T" >"$WORK/cut.zst"
"$COMMANALYZE" sweep "$WORK/cut.zst" --param board-size=5,127 -q --csv "$WORK/cut.csv" >/dev/null 2>"$WORK/e2"
rc=$?
check damaged_trace_exit test "$rc" -eq 2
check damaged_trace_partial_csv test -s "$WORK/cut.csv"

# ---- MPI -----------------------------------------------------------------------------
if [ ! -x "$MPIBIN" ]; then
	skip mpi_identical "not built (make MPI=1)"
elif ! command -v mpirun >/dev/null; then
	skip mpi_identical "mpirun not installed"
else
	mpiflags="--oversubscribe"
	[ "$(id -u)" = 0 ] && mpiflags="$mpiflags --allow-run-as-root"
	# shellcheck disable=SC2086
	mpirun $mpiflags -np 2 "$MPIBIN" sweep "$T" --param board-size=3,17,127 --param period-multiplier=1..4 \
		--param expiry=comdetective,samples:2 -q --csv "$WORK/mpi.csv" -o "$WORK/mpi.h5" >/dev/null 2>"$WORK/mpi.err"
	rc=$?
	check mpi_exit_0 test "$rc" -eq 0
	check mpi_identical cmp -s "$WORK/j1.csv" "$WORK/mpi.csv"
	if [ "$have_h5" = 1 ]; then
		check mpi_h5_identical cmp -s <(strip "$WORK/j1.h5") <(strip "$WORK/mpi.h5")
	fi
	T2="$WORK/t2.zst"
	"$MKTRACE" "$T2" big 50000
	# shellcheck disable=SC2086
	mpirun $mpiflags -np 3 "$MPIBIN" --traces "$T,$T2" --param board-size=5,127 -q \
		--csv "$WORK/mpi2.csv" >/dev/null 2>&1
	"$COMMANALYZE" sweep --traces "$T,$T2" --param board-size=5,127 -q -j 1 --csv "$WORK/one2.csv" 2>/dev/null
	check mpi_traces_identical cmp -s "$WORK/one2.csv" "$WORK/mpi2.csv"
fi

done_tests
