#!/usr/bin/env bash
# End-to-end: analysis of many threads in memory that grows with the pairs
# that communicate (doc/commanalyze.1, Sparse matrices), on a generated
# trace: `ana_mktrace regions N`, N = 6000 threads in a ring (thread i
# stores line i, thread i+1 mod N loads it: N pairs, weight 1000 each under
# the comdetective model with a board that holds every line); receivers
# whose index is a multiple of 3 load inside region "a" (A = N/3 of them),
# and phase "second" starts after the loads of lines 0 .. N/2 - 1.
#
#   sparse/regions/*    regions --format csv against the hand computation:
#                       (program) 1000 N, every thread in two pairs (load
#                       2000, imbalance 1), top pair T0-T1; a: A entries,
#                       1000 A, its pairs (r-1, r) and (0, N-1) for the
#                       receivers r, each thread in one (load 1000), top
#                       pair T0-T(N-1) (the first in row-major order)
#   sparse/node         regions --node a: sparse triplets (N > 1024), both
#                       directions of a's pairs, 1000 each
#   sparse/timeline     the two phases: 1000 N/2 each, top pairs T0-T1 and
#                       T0-T(N-1)
#   sparse/sweep/K      period-multiplier K = 1, 2, 3 (one sample per thread
#                       and kind, index 0, kept for every K): volume 1000 K N,
#                       N events, against the K = 1 reference L1 = K - 1,
#                       excess (K - 1) / K, ratio K
#   sparse/memory/CMD   peak RSS (/usr/bin/time) of each command (-j 2: the
#                       same decoding pool on every machine) minus that of
#                       `info` on the same trace (the trace and its thread
#                       table, no analysis) stays below N x 4096 bytes.
# The memory bound: a dense N x N matrix is N^2 x 8 bytes (288 MB here) and
# an analysis holds several (thread all/true/false; regions: three per
# node, two per phase); even counting only the pages a dense store touches,
# the ring puts a cell in every row, and a row (48 KB) spans 12 pages, so
# ONE dense matrix adds at least N pages = N x 4096 bytes (24 MB).  The
# sparse store costs at most 96 bytes a cell and matrices object (row and
# column 8, three values 24, hash entries at most 16; arrays at most
# doubled), and this trace has at most 8 such objects per cell (the
# analysis' thread, core and socket indexes, the root, a, two phases of
# weights and counts): 4.6 MB; the rest grows with threads and lines, not
# with pairs (per-line attribution state about 1.5 KB a line, the replay's
# per-thread state under 0.5 KB): about 12 MB in all, so the bound fails
# a command that holds even one matrix densely.  Never a timing.
. "$(dirname "$0")/../lib.sh"
MK="$CT_BUILD/tests/ana_mktrace"
require sparse "$COMMANALYZE" "$MK" python3
N=6000
T="$WORK/ring.zst"
if ! "$MK" "$T" regions "$N" >/dev/null 2>&1; then
	fail sparse/trace "ana_mktrace regions $N failed"
	done_tests
fi
B=(--board-size 65536)

# ---- regions ---------------------------------------------------------------------
"$COMMANALYZE" regions "$T" "${B[@]}" --format csv -q -o "$WORK/regions.csv"
python3 - "$WORK/regions.csv" "$N" >"$WORK/verdicts" <<'EOF'
import csv, sys
rows = {r["path"]: r for r in csv.DictReader(open(sys.argv[1]))}
n = int(sys.argv[2])
recv = [r for r in range(n) if r % 3 == 0]
a_threads = sorted({t for r in recv for t in (r, (r - 1) % n)})
want = {
    "(program)": dict(depth="0", entries="0", threads=str(n), total=str(1000 * n),
                      true=str(1000 * n), false="0", imbalance="1", top_a="0", top_b="1",
                      top_weight="1000", load=" ".join(f"{t}=2000" for t in range(n))),
    "a": dict(depth="1", entries=str(len(recv)), threads=str(len(recv)),
              total=str(1000 * len(recv)), true=str(1000 * len(recv)), false="0",
              imbalance="1", top_a="0", top_b=str(n - 1), top_weight="1000",
              load=" ".join(f"{t}=1000" for t in a_threads)),
}
for path, w in want.items():
    got = rows.get(path)
    bad = [f"{k}={got[k][:40]!r} want {v[:40]!r}" for k, v in w.items() if got and got[k] != v]
    name = "program" if path == "(program)" else path
    if got is None:
        print("fail", name, "no row")
    elif bad:
        print("fail", name, "; ".join(bad))
    else:
        print("ok", name, "-")
print("ok" if len(rows) == 2 else "fail", "count", f"{len(rows)} regions, want 2")
EOF
while read -r verdict name why; do
	if [ "$verdict" = ok ]; then pass "sparse/regions/$name"; else fail "sparse/regions/$name" "$why"; fi
done <"$WORK/verdicts"

"$COMMANALYZE" regions "$T" "${B[@]}" --node a --format csv -q -o "$WORK/node.csv"
check sparse/node python3 - "$WORK/node.csv" "$N" <<'EOF'
import csv, sys
n = int(sys.argv[2])
rows = list(csv.DictReader(open(sys.argv[1])))
cells = {(int(r["row"]), int(r["column"])): float(r["value"]) for r in rows}
want = {}
for r in range(0, n, 3):
    s = (r - 1) % n
    want[(r, s)] = want[(s, r)] = 1000.0
sys.exit(0 if cells == want and len(rows) == len(want) else 1)
EOF

# ---- timeline by phase -------------------------------------------------------------
"$COMMANALYZE" timeline "$T" "${B[@]}" --format csv -q -o "$WORK/phases.csv"
check sparse/timeline python3 - "$WORK/phases.csv" "$N" <<'EOF'
import csv, sys
n = int(sys.argv[2])
s = list(csv.DictReader(open(sys.argv[1])))
got = [(r["phase"], r["total"], r["false"], r["top_a"], r["top_b"], r["top_weight"]) for r in s]
half = str(1000 * n // 2)
want = [("(start)", half, "0", "0", "1", "1000"), ("second", half, "0", "0", str(n - 1), "1000")]
sys.exit(0 if got == want else 1)
EOF

# ---- sweep ----------------------------------------------------------------------------
"$COMMANALYZE" sweep "$T" "${B[@]}" --param period-multiplier=1,2,3 --csv "$WORK/sweep.csv" -q \
	--no-progress
python3 - "$WORK/sweep.csv" "$N" >"$WORK/verdicts" <<'EOF'
import csv, sys
n = int(sys.argv[2])
for r in csv.DictReader(open(sys.argv[1])):
    k = int(r["period-multiplier"])
    want = dict(volume=1000 * k * n, events=n, l1=k - 1, excess=(k - 1) / k, ratio=k,
                missing=0, l1_shape=0)
    bad = [f"{m}={r[m]} want {v}" for m, v in want.items() if float(r[m]) != v]
    print("fail" if bad else "ok", k, "; ".join(bad) or "-")
EOF
while read -r verdict k why; do
	if [ "$verdict" = ok ]; then pass "sparse/sweep/$k"; else fail "sparse/sweep/$k" "$why"; fi
done <"$WORK/verdicts"

# ---- peak memory -------------------------------------------------------------------------
if [ ! -x /usr/bin/time ]; then
	skip sparse/memory "needs /usr/bin/time (GNU time) for the peak RSS"
	done_tests
fi
if [ "${ASAN:-0}" = 1 ]; then
	# its quarantine keeps freed blocks, its shadow maps them: peak RSS
	# follows what was ever allocated, not what is held
	skip sparse/memory "under AddressSanitizer the peak RSS is not the analysis' memory (quarantine, shadow): the bound is checked by make check"
	done_tests
fi
# rss CMD...: peak RSS of the command in KiB (empty if it failed)
rss() {
	/usr/bin/time -f '%M' -o "$WORK/rss" "$@" >/dev/null 2>"$WORK/rss.err" &&
		tail -n 1 "$WORK/rss"
}
base=$(rss "$COMMANALYZE" info "$T")
limit=$((base + N * 4096 / 1024))
O="$WORK/out"
while IFS='|' read -r name args; do
	# shellcheck disable=SC2086
	kb=$(rss "$COMMANALYZE" $args "$T" "${B[@]}" -j 2 -q -o "$O")
	if [ -z "$kb" ]; then
		fail "sparse/memory/$name" "commanalyze $args failed: $(head -c 300 "$WORK/rss.err")"
	elif [ "$kb" -lt "$limit" ]; then
		pass "sparse/memory/$name"
	else
		fail "sparse/memory/$name" "peak RSS $kb KiB, want < $limit KiB (info: $base KiB + N x 4 KiB)"
	fi
done <<'EOF'
report|report
matrix-csv|matrix --format csv
matrix-svg|matrix --format svg
matrix-h5|matrix --format h5
regions|regions
regions-node|regions --node a --format csv
timeline|timeline
timeline-changes|timeline --interval 5us --changes --format csv
timeline-h5|timeline --interval 10us --format h5
timeline-svg|timeline --format svg
html|html
objects|objects
objects-object|objects --object unknown --format csv
lines|lines
sweep|sweep --param period-multiplier=1,2 --no-progress
EOF
done_tests
