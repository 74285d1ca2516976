#!/usr/bin/env bash
# End-to-end: regions and timeline (issue 14) on recorded programs.
#   regions/phases/*   tests/ubench/phases (commrec.h markers: region solve
#                      around the regions ring and gather, phases ring and
#                      gather), 4 threads:
#       tree           solve, solve/ring, solve/gather exist, 4 begin
#                      markers each (markers are not sampled: exact)
#       ring, gather   the region's matrix has the region's pattern: the
#                      pattern's cells (ring neighbours; thread 0 with each
#                      other) > 3x the others, and non-zero
#       sums           timeline by phase, by --interval 20ms and by --changes:
#                      the slices add up to the root's total (every event in one slice)
#       phases         the timeline's slices are the phases ring, gather
#       h5, svg, json  the writers (svg: a series per pair, both phases marked)
#       report         the report's Top regions section lists both regions
#       usage          errors: unknown --node, h5 without -o, --interval 0
#       plain          the program runs without commrec (markers do nothing)
#   regions/omp/*      tests/ubench/omp_regions, an unmodified OpenMP program
#                      with two parallel regions and a parallel for with a
#                      dynamic schedule: each named by its outlined function
#                      with file:line, 4 begins each; the
#                      gather region's pattern (the master, trace thread T0,
#                      with each worker) as above.
#   regions/omp-llvm   the same program built by clang (libomp, OMPT): four
#                      regions, by the lines of their pragmas (skipped
#                      without clang -fopenmp)
#   regions/loops/*    tests/ubench/stencil (1-D relaxation, 4 threads):
#                      `commanalyze loops` finds the function relax, its time
#                      loop and inside it the sweep loop, whose file:line
#                      ranges hold the lines marked "time loop" and "sweep
#                      loop" in the source; the sweep loop's matrix has the
#                      neighbour pattern (threads i, i+1) as above.
# Why these bounds: as tests/e2e/pattern_ubench.sh (p2p): the lines of a
# pattern are private to its pairs, so the true traffic off the pattern is
# zero and an off-pattern cell can only be a model artefact or a stray
# detection; "> 3x" fails a matrix without the pattern (uniform: ratio at
# most 2 for ring's 4 of 6 pairs, 1 for gather's 3 of 6).  Sampling on a
# loaded 2-core VM is noisy: each case is recorded again, twice as long,
# before it fails.  -c 200 (200 us of CPU per sample) gives about 700
# samples per thread and region at the first length (stencil: -c 100, the
# floor: its boundary accesses are 1 in 16).
. "$(dirname "$0")/../lib.sh"
. "$UBENCH_SRC/ubrec.sh"

if ! ub_have_recorder || ! ub_have_analyzer; then
	skip regions "no recorder or analyzer: make first"
	done_tests
fi
if ! ub_build phases omp_regions; then
	fail regions/build "cannot build build/ubench/phases and omp_regions"
	done_tests
fi

# check_pattern CSV PATTERN TIDS: python verdict on a symmetric thread matrix
# (commanalyze --format csv, labels T<i>(tid)); TIDS maps benchmark thread i
# to its tid ("i:tid,..."), or "master:T0" for OpenMP (trace thread 0 is the
# master).  Prints "ok ..." or the reason.
pattern() {
	python3 - "$@" <<'EOF'
import csv, re, sys
path, pattern, tids = sys.argv[1], sys.argv[2], sys.argv[3]
rows = list(csv.reader(open(path)))
labels = rows[0][1:]
m = [[float(x) for x in r[1:]] for r in rows[1:]]
if tids.startswith('master:'):
    idx = {}  # trace index -> role: 0 is the master
    bench = {i: i for i in range(len(labels))}
else:
    tid2b = {int(t): int(i) for i, t in (p.split(':') for p in tids.split(','))}
    bench = {}
    for j, l in enumerate(labels):
        mt = re.match(r'T\d+\((\d+)\)', l)
        if mt and int(mt.group(1)) in tid2b:
            bench[j] = tid2b[int(mt.group(1))]
nb = len(set(bench.values())) if not tids.startswith('master:') else len(labels)
on = off = 0.0
for a in range(len(labels)):
    for b in range(a + 1, len(labels)):
        v = m[a][b]
        if a not in bench or b not in bench:
            off += v
            continue
        x, y = bench[a], bench[b]
        if pattern == 'ring':
            good = (x - y) % nb in (1, nb - 1)
        elif pattern == 'chain':
            good = abs(x - y) == 1
        else:
            good = x == 0 or y == 0
        if good:
            on += v
        else:
            off += v
print(('ok' if on > 0 and on > 3 * off else 'no') + ' pattern=%s on=%g off=%g' % (pattern, on, off))
EOF
}

# verdict NAME RESULT: the PASS or FAIL line of a pattern() result
verdict() {
	echo "# $1: $2"
	case $2 in
	ok*) echo "PASS $1" ;;
	*) echo "FAIL $1: the matrix lacks its pattern: $2" ;;
	esac
}

# twice ID FUNCTION ITERS: FUNCTION ITERS, and once more with 2 x ITERS if it
# failed (the first attempt's lines kept as comments); its lines printed.
twice() {
	local id=$1 fn=$2 n=$3
	"$fn" "$n" >"$WORK/$id.res"
	if grep -q '^FAIL ' "$WORK/$id.res"; then
		sed 's/^/# first attempt: /' "$WORK/$id.res"
		"$fn" $((2 * n)) >"$WORK/$id.res"
	fi
	cat "$WORK/$id.res"
	grep -q '^FAIL ' "$WORK/$id.res" && ct_failed=1
}

# tid map "i:tid,..." of a ubench run's output
tidmap() { awk '/^thread_info/ { sub("tid=", "", $3); printf "%s%s:%s", s, $2, $3; s="," }' "$1"; }

# ---- phases ------------------------------------------------------------------
phases_case() {  # ITERS: result lines on stdout
	local n=$1 id=phases
	ub_record "$id" -c 200 -- phases -t 4 -n "$n"
	if [ "$UB_RC" -ne 0 ]; then
		echo "FAIL regions/phases/record: commrec exited $UB_RC: $(tail -n 3 "$WORK/$id.err" | tr '\n' '|')"
		return
	fi
	local tm
	tm=$(tidmap "$WORK/$id.out")
	for r in ring gather; do
		if ! "$COMMANALYZE" regions "$WORK/$id.zst" --node "solve/$r" --format csv \
			>"$WORK/$r.csv" 2>"$WORK/$r.err"; then
			echo "FAIL regions/phases/$r: regions --node solve/$r failed: $(head -c 300 "$WORK/$r.err")"
			continue
		fi
		verdict "regions/phases/$r" "$(pattern "$WORK/$r.csv" "$r" "$tm")"
	done
}
twice ph phases_case 30000000
T="$WORK/phases.zst"

if [ -s "$T" ]; then
	"$COMMANALYZE" regions "$T" --format csv >"$WORK/tree.csv" 2>"$WORK/tree.err"
	check regions/phases/tree python3 -c '
import csv, sys
rows = {r["path"]: r for r in csv.DictReader(open(sys.argv[1]))}
want = ["(program)", "solve", "solve/ring", "solve/gather"]
assert sorted(rows) == sorted(want), rows.keys()
for p in want[1:]:
    assert rows[p]["entries"] == "4" and rows[p]["threads"] == "4", rows[p]
root, solve = float(rows["(program)"]["total"]), float(rows["solve"]["total"])
parts = float(rows["solve/ring"]["total"]) + float(rows["solve/gather"]["total"])
assert root >= solve >= parts > 0, (root, solve, parts)
' "$WORK/tree.csv"

	"$COMMANALYZE" timeline "$T" --format csv >"$WORK/tl.csv" 2>"$WORK/tl.err"
	"$COMMANALYZE" timeline "$T" --format csv --interval 20ms >"$WORK/tlw.csv" 2>"$WORK/tlw.err"
	"$COMMANALYZE" timeline "$T" --format csv --changes >"$WORK/tlc.csv" 2>"$WORK/tlc.err"
	check regions/phases/sums python3 -c '
import csv, sys
root = [float(r["total"]) for r in csv.DictReader(open(sys.argv[1])) if r["path"] == "(program)"][0]
for f in sys.argv[2:]:
    s = sum(float(r["total"]) for r in csv.DictReader(open(f)))
    assert abs(s - root) <= 1e-9 * max(root, 1), (f, s, root)
w = list(csv.DictReader(open(sys.argv[3])))
assert len(w) >= 2 and all(int(r["end_ns"]) - int(r["start_ns"]) <= 20000000 for r in w), w[:3]
' "$WORK/tree.csv" "$WORK/tl.csv" "$WORK/tlw.csv" "$WORK/tlc.csv"
	check regions/phases/phases python3 -c '
import csv, sys
ph = [r["phase"] for r in csv.DictReader(open(sys.argv[1]))]
assert ph == ["ring", "gather"], ph
' "$WORK/tl.csv"

	"$COMMANALYZE" timeline "$T" --format svg -o "$WORK/tl.svg" 2>"$WORK/svg.err"
	check regions/phases/svg python3 -c '
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
r = ET.parse(sys.argv[1]).getroot()
series = [g for g in r.iter(ns + "g") if g.get("class") == "series"]
names = [t.text for t in r.iter(ns + "text") if t.get("class") == "phase-name"]
assert series and all(g.find(ns + "polyline") is not None for g in series), "no series"
assert names == ["ring", "gather"], names
' "$WORK/tl.svg"
	# the y axis is labelled, turned about its own anchor (about another point,
	# 35 px away, it was drawn off the picture's left edge)
	check regions/phases/svg_y_axis python3 -c '
import re, sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
r = ET.parse(sys.argv[1]).getroot()
w, h = float(r.get("width")), float(r.get("height"))
y = [t for t in r.iter(ns + "text") if t.get("class") == "y-axis"]
assert len(y) == 1 and y[0].text == "line transfers per ms", [t.text for t in y]
x0, y0 = float(y[0].get("x")), float(y[0].get("y"))
m = re.fullmatch(r"rotate\(-90 ([0-9.]+) ([0-9.]+)\)", y[0].get("transform"))
assert m and (float(m.group(1)), float(m.group(2))) == (x0, y0), y[0].attrib
half = 11 * 0.6 * len(y[0].text) / 2   # the turned text spans y0 +- half
assert 0 < x0 - 11 and x0 < w and 0 < y0 - half and y0 + half < h, (x0, y0, half)
' "$WORK/tl.svg"
	if command -v xmllint >/dev/null; then
		check regions/phases/svg_valid xmllint --noout "$WORK/tl.svg"
	else
		skip regions/phases/svg_valid "xmllint not found (libxml2-utils)"
	fi
	if "$COMMANALYZE" timeline "$T" --format json >"$WORK/tl.json" 2>/dev/null &&
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["by"]=="phase" and len(d["slices"])==2' "$WORK/tl.json" &&
		"$COMMANALYZE" regions "$T" --format json >"$WORK/tree.json" 2>/dev/null &&
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [r["path"] for r in d["regions"]][:2]==["(program)","solve"]' "$WORK/tree.json"; then
		pass regions/phases/json
	else
		fail regions/phases/json "timeline or regions --format json unreadable"
	fi
	if grep -q 'hdf5=1' "$CT_BUILD/build-config" 2>/dev/null && command -v h5ls >/dev/null; then
		"$COMMANALYZE" timeline "$T" --format h5 -o "$WORK/tl.h5" 2>"$WORK/h5.err"
		check regions/phases/h5 test "$(h5ls "$WORK/tl.h5" 2>/dev/null | grep -c '^phase_000[01] ')" = 2
	else
		skip regions/phases/h5 "no HDF5 support in this build or no h5ls (hdf5-tools)"
	fi
	"$COMMANALYZE" "$T" >"$WORK/report.txt" 2>/dev/null
	check regions/phases/report python3 -c '
import sys
t = open(sys.argv[1]).read()
sec = t.split("== Top regions")[1].split("==")[1]
assert all(p in sec for p in ("solve/ring", "solve/gather")), sec
' "$WORK/report.txt"
	rc=0; "$COMMANALYZE" regions "$T" --node nosuch >/dev/null 2>&1 || rc=$?
	rc2=0; "$COMMANALYZE" timeline "$T" --format h5 >/dev/null 2>&1 || rc2=$?
	rc3=0; "$COMMANALYZE" timeline "$T" --interval 0 >/dev/null 2>&1 || rc3=$?
	rc4=0; "$COMMANALYZE" regions "$T" --format svg -o "$WORK/x.svg" >/dev/null 2>&1 || rc4=$?
	check regions/phases/usage test "$rc/$rc2/$rc3/$rc4" = 1/1/1/1
fi
ub_plain phases-plain phases -t 3 -n 100000
check regions/phases/plain test "$UB_RC" = 0 -a -n "$(grep '^done threads=3' "$WORK/phases-plain.out")"

# ---- OpenMP ------------------------------------------------------------------
omp_case() {  # ITERS
	local n=$1 id=omp
	ub_record "$id" -c 200 -- omp_regions 4 "$n"
	if [ "$UB_RC" -ne 0 ]; then
		echo "FAIL regions/omp/record: commrec exited $UB_RC: $(tail -n 3 "$WORK/$id.err" | tr '\n' '|')"
		return
	fi
	"$COMMANALYZE" regions "$WORK/$id.zst" --format csv >"$WORK/omp.csv" 2>"$WORK/omp.err"
	if python3 -c '
import csv, re, sys
rows = {r["name"]: r for r in csv.DictReader(open(sys.argv[1]))}
for f in ("ring_update._omp_fn.0", "gather._omp_fn.0", "scale_sum._omp_fn.0"):
    r = rows[f]
    assert r["entries"] == "4" and re.search(r"omp_regions\.c:\d+$", r["where"]), r
' "$WORK/omp.csv" 2>"$WORK/omp.py"; then
		echo "PASS regions/omp/names"
	else
		echo "FAIL regions/omp/names: $(tail -n 1 "$WORK/omp.py") in $(cut -d, -f1-5 "$WORK/omp.csv" | tr '\n' '|')"
	fi
	if "$COMMANALYZE" regions "$WORK/$id.zst" --node gather._omp_fn.0 --format csv \
		>"$WORK/og.csv" 2>/dev/null; then
		verdict regions/omp/gather "$(pattern "$WORK/og.csv" gather master:T0)"
	else
		echo "FAIL regions/omp/gather: regions --node gather._omp_fn.0 failed"
	fi
}
twice omp omp_case 60000000
# ---- OpenMP, LLVM's libomp (OMPT) ----------------------------------------------
# The same program built by clang: its parallel regions come through the OMPT
# tool interface; clang inlines the functions into main, so the regions are
# told apart by the line of their pragma: three distinct lines (and the
# final printing region), 4 begins each.  Markers only, no pattern: exact.
if command -v clang >/dev/null &&
	clang -fopenmp -O2 -g -std=c11 -D_GNU_SOURCE "$UBENCH_SRC/omp_regions.c" \
		-o "$WORK/omp_llvm" 2>/dev/null && "$WORK/omp_llvm" 4 1000 >/dev/null 2>&1; then
	timeout -k 5 "$UB_TIMEOUT" "$COMMREC" -q -f -o "$WORK/omp_llvm.zst" -- "$WORK/omp_llvm" 4 1000000 \
		>/dev/null 2>"$WORK/omp_llvm.err"
	"$COMMANALYZE" regions "$WORK/omp_llvm.zst" --format csv >"$WORK/omp_llvm.csv" 2>/dev/null
	check regions/omp-llvm/regions python3 -c '
import csv, re, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["depth"] == "1"]
lines = {re.search(r"omp_regions\.c:(\d+)$", r["where"]).group(1) for r in rows}
assert len(rows) == 4 and len(lines) == 4, [(r["name"], r["where"]) for r in rows]
assert all(r["entries"] == "4" for r in rows), rows
' "$WORK/omp_llvm.csv"
else
	skip regions/omp-llvm "no clang with OpenMP (libomp) here"
fi

# ---- loops ---------------------------------------------------------------------
SRC="$UBENCH_SRC/stencil.c"
TL=$(grep -n 'time loop \*/' "$SRC" | cut -d: -f1)
SL=$(grep -n 'sweep loop \*/' "$SRC" | cut -d: -f1)
loops_case() {  # ITERS
	local n=$1 id=stencil
	ub_record "$id" -c 100 -- stencil -t 4 -n "$n"
	if [ "$UB_RC" -ne 0 ]; then
		echo "FAIL regions/loops/record: commrec exited $UB_RC: $(tail -n 3 "$WORK/$id.err" | tr '\n' '|')"
		return
	fi
	"$COMMANALYZE" loops "$WORK/$id.zst" --format csv >"$WORK/loops.csv" 2>"$WORK/loops.err"
	local node
	node=$(python3 -c '
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
tl, sl = int(sys.argv[2]), int(sys.argv[3])
def span(r):
    m = re.search(r"stencil\.c:(\d+)(?:-(\d+))?$", r["where"])
    return (int(m.group(1)), int(m.group(2) or m.group(1))) if m else None
by = {r["path"]: r for r in rows}
for r in rows:
    p = r["path"]
    if not p.startswith("relax/") or p.count("/") != 2:
        continue
    outer, inner = span(by[p.rsplit("/", 1)[0]]), span(r)
    if outer and inner and outer[0] <= tl <= outer[1] and inner[0] <= sl <= inner[1] and \
            not inner[0] <= tl < sl:
        print(p)
        break
' "$WORK/loops.csv" "$TL" "$SL")
	if [ -z "$node" ]; then
		echo "FAIL regions/loops/found: no relax/LOOP/LOOP with the time loop (line $TL) around the sweep loop (line $SL): $(cut -d, -f1-3 "$WORK/loops.csv" | tr '\n' '|')"
		return
	fi
	echo "PASS regions/loops/found"
	if "$COMMANALYZE" loops "$WORK/$id.zst" --node "$node" --format csv >"$WORK/sweep.csv" 2>/dev/null; then
		echo "# sweep loop: $node"
		verdict regions/loops/sweep "$(pattern "$WORK/sweep.csv" chain "$(tidmap "$WORK/$id.out")")"
	else
		echo "FAIL regions/loops/sweep: loops --node $node failed"
	fi
}
twice loops loops_case 20000000

# ---- loops named by their own function's lines ------------------------------------
# A loop whose code holds an inlined helper defined earlier in the file is
# named by its own line (@LOOP), not the helper's (@HELPER), and one source
# loop is never a node inside a node of the same name.
OWN_SRC="$WORK/own_lines.c"
cat >"$OWN_SRC" <<'PROG'
#include <pthread.h>
#include <stdlib.h>
static inline __attribute__((always_inline)) void bump(volatile long *p, long v)
{
	*p = *p + v;                                        /* @HELPER */
}
static volatile long shared[2] __attribute__((aligned(64)));
static long iters;
static void *worker(void *arg)
{
	long id = (long)arg;
	for (long i = 0; i < iters; i++) {                  /* @LOOP */
		bump(&shared[id], i);
		bump(&shared[1 - id], 1);
	}
	return NULL;
}
int main(int argc, char **argv)
{
	pthread_t t[2];
	iters = argc > 1 ? atol(argv[1]) : 1000;
	for (long k = 0; k < 2; k++)
		pthread_create(&t[k], NULL, worker, (void *)k);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	return 0;
}
PROG
own_lines_case() {  # ITERS
	local n=$1
	rm -rf "$WORK/own.zst" "$WORK/own.zst.spool"
	if ! timeout -k 5 "$UB_TIMEOUT" "$COMMREC" -q -f -s soft -c 100 -o "$WORK/own.zst" -- \
		"$WORK/own_lines" "$n" >"$WORK/own.out" 2>"$WORK/own.err"; then
		echo "FAIL regions/loops/own-lines: commrec failed: $(tail -n 3 "$WORK/own.err" | tr '\n' '|')"
		return
	fi
	"$COMMANALYZE" loops "$WORK/own.zst" --model window --window 5ms --format csv \
		>"$WORK/own.csv" 2>"$WORK/own.aerr"
	python3 - "$WORK/own.csv" "$OWN_SRC" <<'EOF2'
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
marks = {}
for n, line in enumerate(open(sys.argv[2]), 1):
    for m in re.findall(r"@([A-Z]+)", line):
        marks[m] = n
loops = [r for r in rows if r["path"].startswith("worker/")]
names = [r["path"] for r in loops]
want = "worker/loop:%d" % marks["LOOP"]
nested = [p for p in names if re.search(r"(loop:\d+)/(?:.*/)?\1(/|$)", p)]
if want not in names:
    print("FAIL regions/loops/own-lines: no %s (helper line %d) in %s" % (want, marks["HELPER"], names))
elif nested:
    print("FAIL regions/loops/own-lines: a loop inside a loop of its name: %s" % nested)
else:
    print("PASS regions/loops/own-lines")
EOF2
}
if cc -g -O2 -pthread "$OWN_SRC" -o "$WORK/own_lines" 2>"$WORK/own.cc.err"; then
	twice own own_lines_case 20000000
else
	fail regions/loops/own-lines "cannot compile: $(head -c 300 "$WORK/own.cc.err")"
fi
done_tests
