#!/usr/bin/env bash
# make demo: record two bundled microbenchmarks whose communication is known
# (tests/ubench/README.md), analyze them every way commanalyze can, and analyze
# the example traces in datasets/ (recorded elsewhere, no recording needed).
# Everything it writes goes to $B/demo/. About 20 s on a 2-core VM.
#
#   B=build scripts/demo.sh        (make demo builds first, then runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
out="$B/demo"
mkdir -p "$out"
rec="$B/commrec"
ana="$B/commanalyze"
for p in "$rec" "$ana" "$B/ubench/p2p" "$B/ubench/false_sharing"; do
	[ -x "$p" ] || { echo "demo: $p is missing: run make B=$B first" >&2; exit 1; }
done

if [ -t 1 ]; then bold=$'\033[1m' dim=$'\033[2m' off=$'\033[0m'; else bold='' dim='' off=''; fi
say() { printf '\n%s== %s ==%s\n' "$bold" "$1" "$off"; shift; for l in "$@"; do printf '%s   %s%s\n' "$dim" "$l" "$off"; done; echo; }
# one section of the report ("== Totals ==" up to the next heading)
section() { awk -v s="== $1 ==" '$0 == s { on = 1; next } /^== / { on = 0 } on && NF'; }
# a text matrix without its attribute header (model options, units, ...)
matrix_body() { grep -v '^  [a-z0-9:-]*: '; }
t0=$(date +%s)

# --------------------------------------------------------------------------
say "0. Which samplers work on this machine" \
	"pebs (Intel) and ibs (AMD) need a CPU PMU; soft works anywhere (VMs, CI):" \
	"it samples every 1 ms of a thread's CPU time and decodes the instruction."
"$rec" --list-samplers

recorded=yes
# --------------------------------------------------------------------------
say "1. Record the p2p microbenchmark (tests/ubench/p2p.c) -t 4: two pairs of threads, 0-1 and 2-3" \
	"Each pair stores to its own shared cache line; nothing crosses pairs." \
	"commrec -q runs the program unmodified (LD_PRELOAD runtime) and writes one trace." \
	"Under commrec the main thread is T0 and the 4 workers are T1..T4 (in start order)."
echo "\$ commrec -q -f -o $out/p2p.zst -- $B/ubench/p2p -t 4 -n 600000000"
if "$rec" -q -f -o "$out/p2p.zst" -- "$B/ubench/p2p" -t 4 -n 600000000 >"$out/p2p.out"; then
	grep '^done' "$out/p2p.out" | sed 's/^/  program says: /'
	printf '  trace: %s, %s bytes\n' "$out/p2p.zst" "$(stat -c %s "$out/p2p.zst")"
else
	echo "  recording failed (status $?): skipping to the bundled traces (section 7)"
	recorded=no
fi

if [ $recorded = yes ]; then
# --------------------------------------------------------------------------
say "2. The report: commanalyze $out/p2p.zst" \
	"Look at: Top thread pairs (only the two pairs, ~100% true sharing), Top objects" \
	"(pair_line[0] and pair_line[1], the two shared lines, by the right threads)," \
	"and Warnings (how trustworthy the figures are: event count, soft sampler weights)."
"$ana" "$out/p2p.zst"

# --------------------------------------------------------------------------
say "3. The thread matrix: commanalyze matrix $out/p2p.zst" \
	"Cell (i,j): estimated cache-line transfers between threads i and j (symmetric)." \
	"Expected: two blocks, T1<->T2 and T3<->T4 (if the threads started in order);" \
	"'.' everywhere else. T0, the main thread, only creates and joins."
"$ana" matrix "$out/p2p.zst" | matrix_body
"$ana" matrix "$out/p2p.zst" --format svg -o "$out/p2p-threads.svg"

# --------------------------------------------------------------------------
say "4. Record the false_sharing microbenchmark (tests/ubench/false_sharing.c) -t 4 -f 0.9" \
	"90% of the time each thread does an atomic add to its OWN word of one line" \
	"(false sharing: different bytes, same line), else to word 0 of another line" \
	"that all threads update (true sharing)."
echo "\$ commrec -q -f -o $out/fs.zst -- $B/ubench/false_sharing -t 4 -f 0.9 -n 150000000"
"$rec" -q -f -o "$out/fs.zst" -- "$B/ubench/false_sharing" -t 4 -f 0.9 -n 150000000 >"$out/fs.out"
grep '^done' "$out/fs.out" | sed 's/^/  program says: /'
echo
echo "Report, Totals section (commanalyze $out/fs.zst):"
"$ana" "$out/fs.zst" | section Totals
echo "Warnings:"
"$ana" "$out/fs.zst" | section Warnings
echo
echo "Thread matrix, false sharing only (--kind false): all-to-all this time."
"$ana" matrix "$out/fs.zst" --kind false | matrix_body
"$ana" matrix "$out/fs.zst" --kind all --format svg -o "$out/fs-all.svg"
"$ana" matrix "$out/fs.zst" --kind false --format svg -o "$out/fs-false.svg"
"$ana" matrix "$out/fs.zst" --kind true --format svg -o "$out/fs-true.svg"
"$ana" matrix "$out/fs.zst" --index core --format svg -o "$out/fs-cores.svg"

# --------------------------------------------------------------------------
say "5. Which data: commanalyze objects $out/fs.zst" \
	"Objects (globals with their struct fields, heap blocks by allocation call path," \
	"stacks, TLS) ranked by communication, from the symbols embedded in the trace." \
	"Look at: false_line is 100% false sharing between its fields w[0], w[1], ... each" \
	"written by one thread; true_line is true sharing on w[0]; the code line doing it."
"$ana" objects "$out/fs.zst"

# --------------------------------------------------------------------------
say "6. Which cache lines, which bytes: commanalyze lines $out/fs.zst" \
	"Per line, per offset: the field, who writes and reads it, true vs false events." \
	"False sharing shows as several offsets of one line, each with a different writer."
"$ana" lines "$out/fs.zst"

# --------------------------------------------------------------------------
say "7. Sweep: one trace replayed under 9 model settings in one pass" \
	"board-size 1,7,127 (ComDetective's bulletin board; 1 entry = the two hot lines" \
	"evict each other) x period-multiplier 1,2,4 (as if sampled 2x, 4x less often)." \
	"Each point is compared with the reference (*): how much do the volume, the" \
	"true/false split and the pair pattern (L1, shape, pearson, top-k) depend on the knobs?"
if ! "$ana" sweep "$out/fs.zst" -p board-size=1,7,127 -p period-multiplier=1,2,4 \
	-o "$out/sweep.h5" --csv "$out/sweep.csv" --plot "$out/sweep.svg" --no-progress 2>"$out/sweep.err"; then
	# a build without HDF5: the same sweep, CSV and plot only
	cat "$out/sweep.err" >&2
	rm -f "$out/sweep.h5"
	"$ana" sweep "$out/fs.zst" -p board-size=1,7,127 -p period-multiplier=1,2,4 \
		--csv "$out/sweep.csv" --plot "$out/sweep.svg" --no-progress
else
	cat "$out/sweep.err" >&2
fi
rm -f "$out/sweep.err"
fi # recorded

# --------------------------------------------------------------------------
if ls datasets/*.zst >/dev/null 2>&1; then
	for t in datasets/*.zst; do
		say "8. Bundled trace $t: no recording needed" \
			"Self-contained (symbols embedded): analyze it anywhere, without the program." \
			"datasets/README.md says how it was recorded and what pattern to expect."
		"$ana" info "$t" | awk '/^(format|complete|command):/ ||
			/^  (cpu_model|nproc|cores|sockets|sampler|period|period_unit|commrec_version)=/ && !seen[$0]++'
		echo
		"$ana" "$t" | section Totals
		"$ana" "$t" | section "Top thread pairs"
		"$ana" objects "$t" --top 3
	done
fi

# --------------------------------------------------------------------------
say "Files in $out" \
	"Open the .svg heatmaps in a browser: p2p-threads.svg (two blocks), fs-false.svg" \
	"(all-to-all), fs-cores.svg (by core); sweep.svg: the sweep metrics per knob value." \
	"Each heatmap scales its colours from its own smallest to largest non-zero cell:" \
	"read the legend before comparing two pictures (fs-true vs fs-false)." \
	"sweep.csv / sweep.h5: every point's metrics (and, in the HDF5 file, matrices)."
ls -l "$out"
echo
echo "demo: done in $(( $(date +%s) - t0 )) s"
