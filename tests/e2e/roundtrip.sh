#!/usr/bin/env bash
# Every machine-readable output of commanalyze read back by the tools people
# use (tests/roundtrip.py): each CSV by Python's csv module (and pandas when
# installed: python3-pandas), each JSON by json, each HDF5 by h5py
# (python3-h5py) with numbers stored as numbers.  On the bundled traces,
# whose lines have several writers (fields with commas); the sparse forms of
# the matrices (triplets) against the dense ones.
. "$(dirname "$0")/../lib.sh"
require roundtrip "$COMMANALYZE" python3
A="$COMMANALYZE"
# Debian's python, where python3-h5py and python3-pandas install (a python3
# earlier in PATH, e.g. pyenv's, does not see them)
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
RT="$PY $CT_ROOT/tests/roundtrip.py"
FS="$CT_ROOT/datasets/false_sharing-4t-f0.9.zst"
P2P="$CT_ROOT/datasets/p2p-4t.zst"

# out NAME CMD...: run, FAIL NAME if it fails
out() { local n=$1; shift; "$@" 2>"$WORK/err" || { fail "$n" "$* ($(head -c 200 "$WORK/err"))"; return 1; }; }
# rt NAME CHECK ARGS...: a roundtrip.py check
rt() { local n=$1; shift; if $RT "$@" >"$WORK/rt.out" 2>&1; then pass "$n"; else fail "$n" "$(head -c 300 "$WORK/rt.out")"; fi; }

# ---- matrices: CSV and JSON, cell for cell ------------------------------------
for ix in thread core socket; do
	for k in all true false; do
		n="matrix_${ix}_$k"
		out "$n" "$A" matrix "$FS" --index $ix --kind $k --format csv -o "$WORK/$n.csv" &&
			out "$n" "$A" matrix "$FS" --index $ix --kind $k --format json -o "$WORK/$n.json" &&
			rt "${n}_csv" csv "$WORK/$n.csv" && rt "${n}_csv_is_json" matrix "$WORK/$n.csv" "$WORK/$n.json"
	done
done

# ---- objects and lines: the same rows in CSV and JSON ------------------------
for c in objects lines; do
	for t in "$FS" "$P2P"; do
		n="${c}_$(basename "$t" .zst)"
		out "$n" "$A" $c "$t" --top 0 --format csv -o "$WORK/$n.csv" || continue
		out "$n" "$A" $c "$t" --top 0 --format json -o "$WORK/$n.json" || continue
		rt "${n}_csv" csv "$WORK/$n.csv" $([ $c = lines ] && echo 17 || echo 12)
		rt "${n}_json" json "$WORK/$n.json"
	done
done
# a field that holds commas reads back whole: the four writers of true_line
n=objects_false_sharing-4t-f0.9
check objects_fields_whole bash -c "$RT csv-field '$WORK/$n.csv' 2 10 | grep -qx 'true_line.w\[0\]@0:T1,T2,T3,T4'"
# lines: writers and readers as sets, never cut
check lines_writers_field bash -c "$PY - '$WORK/lines_false_sharing-4t-f0.9.csv' <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
ws = [r['writers'] for r in rows]
assert all(w == '-' or all(t.startswith('T') and t[1:].isdigit() for t in w.split(',')) for w in ws), ws
assert any(len(w.split(',')) == 4 for w in ws), ws
PY"

# ---- report --format json: the figures agree with the matrices ------------------
for t in "$FS" "$P2P"; do
	n="report_json_$(basename "$t" .zst)"
	out "$n" "$A" report "$t" --format json -o "$WORK/$n.json" || continue
	out "$n" "$A" matrix "$t" --format json -o "$WORK/$n.m.json" || continue
	out "$n" "$A" objects "$t" --format json --top 10 -o "$WORK/$n.o.json" || continue
	check "$n" bash -c "$PY -m json.tool '$WORK/$n.json' >/dev/null"
	check "${n}_figures" $PY - "$WORK/$n.json" "$WORK/$n.m.json" "$WORK/$n.o.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))["matrices"][0]   # thread_all, M + M^T
o = json.load(open(sys.argv[3]))
assert r["schema"] == "commtrace-report/1"
n = m["n"]
cells = m["data"]
upper = sum(cells[i][j] for i in range(n) for j in range(i, n))   # the diagonal is not doubled
t = r["totals"]
assert abs(t["transfers"] - upper) <= 1e-9 * max(1, upper), (t["transfers"], upper)
assert abs(t["true"] + t["false"] - t["transfers"]) <= 1e-9 * max(1, t["transfers"])
assert t["events"] == t["events_from_samples"] + t["events_from_watchpoints"] + t["events_exact"]
assert abs(sum(p["transfers"] for p in r["pairs"]) - t["transfers"]) <= 1e-6 * max(1, t["transfers"])
for p in r["pairs"]:
    assert p["a"] <= p["b"] and (p["a"] == p["b"] or abs(p["a_from_b"] + p["b_from_a"] - p["transfers"]) < 1e-6)
assert [x["name"] for x in r["objects"]["objects"]] == [x["name"] for x in o["objects"]]
assert isinstance(r["model"]["options"]["board-size"], int)
assert all(isinstance(w, str) for w in r["warnings"])
# the 90% intervals: around the figure, from the events' variance (these
# sampled traces: comdetective weights, every event of weight w > 1 adds
# w (w - 1) > 0), effective events = transfers^2 / variance
if t["transfers"] > 0:
    assert t["variance"] > 0, t
    assert abs(t["effective_events"] - t["transfers"] ** 2 / t["variance"]) <= 1e-9 * t["effective_events"]
    lo, hi = t["transfers_90"]
    assert 0 <= lo <= t["transfers"] <= hi, t
    lo, hi = t["true_share_90"]
    assert 0 <= lo <= t["true_share"] <= hi <= 1, t
    for p in r["pairs"]:
        lo, hi = p["share_90"]
        assert 0 <= lo <= p["transfers"] / t["transfers"] <= hi <= 1, p
else:
    assert t["transfers_90"] is None and t["effective_events"] is None
PY
done

# ---- info --format json: the same figures as the text ----------------------------
for t in "$FS" "$P2P"; do
	n="info_json_$(basename "$t" .zst)"
	out "$n" "$A" info --format=json "$t" >"$WORK/$n.json" || continue
	out "$n" "$A" info "$t" >"$WORK/$n.txt" || continue
	check "$n" $PY - "$WORK/$n.json" "$WORK/$n.txt" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
txt = open(sys.argv[2]).read()
assert d["schema"] == "commtrace-info/1"
assert len(d["threads"]) == int(re.search(r"^threads: (\d+)$", txt, re.M).group(1))
m = re.search(r"^records: (\d+), samples: (\d+)$", txt, re.M)
assert (d["records"], d["samples"]) == (int(m.group(1)), int(m.group(2)))
assert sum(t["records"] for t in d["threads"]) == d["records"]
assert d["complete"] is True and d["damage"] is None
assert isinstance(d["machine"]["nproc"], int) and isinstance(d["config"]["sampler"], str)
assert d["skipped_samples"]["total"] == int(re.search(r"^skipped samples: (\d+)$", txt, re.M).group(1))
PY
done

# ---- sweep: CSV and HDF5; matrix HDF5 -----------------------------------------------
# (a build without HDF5 says so: the HDF5 files are then not checked)
h5=(-o "$WORK/sweep.h5")
if ! "$A" matrix "$P2P" --format h5 -o "$WORK/probe.h5" >/dev/null 2>"$WORK/err"; then
	grep -qi hdf5 "$WORK/err" && h5=() && skip h5 "built without HDF5"
fi
if out sweep "$A" sweep "$P2P" -q -j 1 --no-progress -p board-size=7,127 -p expiry=comdetective,ns:1000 \
	--csv "$WORK/sweep.csv" "${h5[@]}"; then
	rt sweep_csv csv "$WORK/sweep.csv"
	if [ -s "$WORK/sweep.h5" ]; then
		$RT h5 "$WORK/sweep.h5" >"$WORK/rt.out" 2>&1; rc=$?
		case $rc in 0) pass sweep_h5_numbers ;; 3) skip sweep_h5_numbers "needs python3-h5py" ;;
		*) fail sweep_h5_numbers "$(head -c 600 "$WORK/rt.out" | tr '\n' '|')" ;; esac
	fi
fi
if [ ${#h5[@]} -gt 0 ] && out matrix_h5 "$A" matrix "$FS" --format h5 -o "$WORK/m.h5"; then
	$RT h5 "$WORK/m.h5" >"$WORK/rt.out" 2>&1; rc=$?
	case $rc in 0) pass matrix_h5_numbers ;; 3) skip matrix_h5_numbers "needs python3-h5py" ;;
	*) fail matrix_h5_numbers "$(head -c 600 "$WORK/rt.out" | tr '\n' '|')" ;; esac
fi

# ---- sparse matrices: triplets past 1024 rows, or --cells sparse ----------------------
# ana_mktrace's ring of 1,100 threads (past OUT_DENSE_MAX): thread i stores,
# thread i + 1 loads; with a board that holds every line each load is one
# event of weight 1000 (the period), so the directed matrix is exactly the
# cells (i + 1 mod 1100, i) = 1000.  The same matrices written dense (--cells
# dense) and sparse agree cell for cell, read by pandas and h5py; and on a
# bundled trace with --cells sparse.
RING="$WORK/ring.zst"
if [ ${#h5[@]} -eq 0 ]; then
	skip sparse "built without HDF5"
elif ! $PY -c 'import pandas, h5py' 2>/dev/null; then
	skip sparse "needs python3-pandas and python3-h5py"
elif out ring "$CT_BUILD/tests/ana_mktrace" "$RING" threads 1100; then
	# sparse_forms NAME TRACE ARGS...: NAME.csv/.json/.h5 sparse, NAME.dense.csv/.h5
	sparse_forms() {
		local n=$1 t=$2; shift 2
		for f in csv json h5; do
			out "$n" "$A" matrix "$t" "$@" --format $f -o "$WORK/$n.$f" || return 1
		done
		for f in csv h5; do
			out "$n" "$A" matrix "$t" "$@" --cells dense --format $f -o "$WORK/$n.dense.$f" || return 1
		done
	}
	sparse_forms ring_directed "$RING" --board-size 65536 --directed &&
		rt ring_sparse_exact ring 1100 "$WORK/ring_directed.csv" "$WORK/ring_directed.json" \
			"$WORK/ring_directed.h5" &&
		rt ring_directed_dense_is_sparse sparse "$WORK/ring_directed.dense.csv" \
			"$WORK/ring_directed.dense.h5" "$WORK/ring_directed.csv" "$WORK/ring_directed.json" \
			"$WORK/ring_directed.h5" &&
		rt ring_dense_h5_numbers h5 "$WORK/ring_directed.dense.h5"
	sparse_forms ring_sym "$RING" --board-size 65536 &&
		rt ring_symmetric_dense_is_sparse sparse "$WORK/ring_sym.dense.csv" "$WORK/ring_sym.dense.h5" \
			"$WORK/ring_sym.csv" "$WORK/ring_sym.json" "$WORK/ring_sym.h5" &&
		rt ring_symmetric_h5_numbers h5 "$WORK/ring_sym.h5"
	for k in all true false; do
		sparse_forms "fs_$k" "$FS" --kind $k --cells sparse &&
			rt "fs_${k}_dense_is_sparse" sparse "$WORK/fs_$k.dense.csv" "$WORK/fs_$k.dense.h5" \
				"$WORK/fs_$k.csv" "$WORK/fs_$k.json" "$WORK/fs_$k.h5"
	done
fi

# ---- ComDetective's files --------------------------------------------------------
if out cd_csv "$A" matrix "$FS" --comdetective-csv "$WORK/cd"; then
	for f in "$WORK"/cd/*.csv; do
		rt "cd_$(basename "$f" .csv)" csv "$f"
	done
fi

done_tests
