#!/usr/bin/env bash
# make bench: the performance table.  Measures, never asserts: the targets
# (DESIGN.md) are printed beside the figures so a reader can judge.
#
#   recording   the program's CPU time and peak RSS under commrec (default period) /
#               plain run, for write_volume (no contention), the stencil kernel
#               (a barrier per sweep) and p2p with six threads on the cores (no
#               synchronization), the last two also with -w 0 (no watchpoints);
#               commrec's own end-of-recording wall time and RSS
#   trace       bytes per sample in the trace (compressed)
#   replay      records per second of each model on a sampled trace (exact:
#               on a full trace, below) with one thread (-j1) and two (-j2),
#               peak RSS, and the time against zstd -d on the same trace (the
#               physical limit)
#   threads     report and functions on rings of 1,000 and 10,000 threads
#               (BENCH_THREADS="N ...": other sizes): wall time, peak RSS
#   memory      peak analysis memory (max RSS) and time of every command that
#               builds matrices on a synthetic 10,000-thread ring whose pairs
#               all communicate (BENCH_SPARSE_THREADS=N: another size)
#   sweep       a 64-point sweep against 64 single analyses (tests/bench_sweep.sh)
#   RSS         a tiny program's peak RSS plain and recorded (soft, inst, inst --full)
#   exact       inst --full slowdown, bytes per access, exact replay speed,
#               the functions view on that full trace (records/s, peak RSS)
#
# BENCH_REPEAT=N runs each timed command N times (default 3) and keeps the median.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
REC="$B/commrec"; ANA="$B/commanalyze"
REPEAT=${BENCH_REPEAT:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/ct-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT

row() { printf '%-44s %16s %18s\n' "$1" "$2" "$3"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# time_cmd OUT_PREFIX CMD...: median wall seconds, max RSS (KiB) and CPU
# seconds (user + sys: what the wall time is on a loaded machine) over
# REPEAT runs
time_cmd() {
	local pfx=$1; shift
	: >"$W/$pfx.t"
	for _ in $(seq "$REPEAT"); do
		/usr/bin/time -f '%e %M %U %S' -o "$W/$pfx.one" "$@" >/dev/null 2>"$W/$pfx.err" || true
		tail -n 1 "$W/$pfx.one" >>"$W/$pfx.t"
	done
	awk '{print $1}' "$W/$pfx.t" | median >"$W/$pfx.sec"
	awk '{print $2}' "$W/$pfx.t" | median >"$W/$pfx.rss"
	awk '{print $3 + $4}' "$W/$pfx.t" | median >"$W/$pfx.cpu"
}
# rate N FILE: N / the seconds in FILE, in millions
rate() { awk -v n="$1" -v s="$(cat "$2")" 'BEGIN{ if (s > 0 && n > 0) printf "%.1fM", n/s/1e6; else print "n/a" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3fx", a / b; else print "n/a" }'; }

echo "commtrace bench ($(nproc) cores, $(uname -r), repeat $REPEAT, median)"
row "measure" "value" "target"
row "-------" "-----" "------"

# ---- recording overhead ----------------------------------------------------------
# The program's own CPU time and peak RSS under the runtime come from the
# trace's SUMMARY (commrec's wait4), the plain run's from /usr/bin/time;
# commrec's end of recording (join, symbols) is shown apart: commrec's wall
# time beyond the program's, and its peak RSS (/usr/bin/time: the larger of
# commrec's and the program's) beyond the program's.
#
# recording_rows ID LABEL PROGRAM ARGS...: REPEAT plain and recorded runs
# (default options, plus REC_OPTS), interleaved, medians.
recording_rows() {
	local id=$1 label=$2; shift 2
	: >"$W/$id.plain.t"; : >"$W/$id.rec.t"
	for _ in $(seq "$REPEAT"); do
		/usr/bin/time -f '%e %U %S %M' -o "$W/plain.one" "$@" >/dev/null 2>&1 || true
		awk 'END {print $2 + $3, $4, $1}' "$W/plain.one" >>"$W/$id.plain.t"
		rm -f "$W/$id.zst"
		/usr/bin/time -f '%e %U %S %M' -o "$W/rec.one" "$REC" -q -f ${REC_OPTS:-} -o "$W/$id.zst" -- "$@" \
			>/dev/null 2>"$W/rec.err" || true
		[ -f "$W/$id.zst" ] || continue
		"$ANA" info "$W/$id.zst" >"$W/$id.info" 2>/dev/null || continue
		# program: cpu s, peak RSS KiB, wall s; commrec beyond it: wall s, RSS KiB;
		# samples taken (recorded + skipped)
		awk -v t="$(tail -n 1 "$W/rec.one")" '
			{ sub(/^ +/, "") }
			/^program_utime_ns=/ { split($0, a, "="); u = a[2] }
			/^program_stime_ns=/ { split($0, a, "="); s = a[2] }
			/^program_maxrss_kb=/ { split($0, a, "="); m = a[2] }
			/^program_wall_ns=/ { split($0, a, "="); w = a[2] }
			/^records:/ { gsub(/,/, ""); n = $4 }
			/^skipped samples:/ { k = $3 }
			END {
				if (m == "") exit
				split(t, c, " ")
				extra = c[4] - m; if (extra < 0) extra = 0
				printf "%.3f %d %.3f %.3f %d %d\n", (u + s) / 1e9, m, w / 1e9, c[1] - w / 1e9, extra, n + k
			}' "$W/$id.info" >>"$W/$id.rec.t"
	done
	col() { awk -v k="$2" '{print $k}' "$W/$1.t" | median; }
	if [ -s "$W/$id.rec.t" ] && [ -s "$W/$id.plain.t" ]; then
		local p_cpu p_rss p_wall r_cpu r_rss r_wall n
		p_cpu=$(col "$id.plain" 1); p_rss=$(col "$id.plain" 2); p_wall=$(col "$id.plain" 3)
		r_cpu=$(col "$id.rec" 1); r_rss=$(col "$id.rec" 2); r_wall=$(col "$id.rec" 3)
		n=$(col "$id.rec" 6)
		row "recording CPU time ($label)" "$(ratio "$r_cpu" "$p_cpu")" "$RECORD_TARGET"
		row "  program CPU: plain / under commrec" "$p_cpu / $r_cpu s" ""
		row "  program wall: plain / under commrec" "$p_wall / $r_wall s" ""
		row "  samples taken (recorded + skipped)" "$n" ""
		# soft: the path commrec chose (timers or perf events) in the last run
		local path
		path=$(sed -n 's/^ *soft_path=//p' "$W/$id.info" 2>/dev/null | head -n 1)
		[ -z "$path" ] || row "  soft path (CONFIG soft_path)" "$path" ""
		local rings
		rings=$(sed -n 's/^ *sampler_rings=//p' "$W/$id.info" 2>/dev/null | head -n 1)
		[ -z "$rings" ] || row "  soft rings (SUMMARY sampler_rings)" "$rings" ""
		# armed watchpoints cost at every context switch (commrec(1), Costs):
		# on a barrier-heavy program the added CPU follows them, not the samples
		local wps
		wps=$(sed -n 's/^ *watchpoints=//p' "$W/$id.info" 2>/dev/null | head -n 1)
		[ -z "$path" ] || row "  watchpoints (CONFIG)" "${wps:-?}" ""
		row "  added program CPU per sample" \
			"$(awk -v a="$r_cpu" -v b="$p_cpu" -v n="$n" 'BEGIN { if (n > 0) printf "%.0f us", (a - b) / n * 1e6; else print "n/a" }')" ""
		row "recording peak RSS (the program's)" "$(ratio "$r_rss" "$p_rss")" "<= 1.05x"
		row "  added peak RSS" "$(( r_rss - p_rss )) KiB" ""
		row "commrec end of recording (join, symbols)" "$(col "$id.rec" 4) s wall" ""
		row "  commrec peak RSS beyond the program's" "$(col "$id.rec" 5) KiB" ""
	else
		row "recording ($label)" "n/a (commrec failed: $(head -c 120 "$W/rec.err" 2>/dev/null))" ""
	fi
}

# A program without contention (private stores only: contended benchmarks give
# chaotic wall times).
RECORD_TARGET="<= 1.05x"
recording_rows wv "write_volume -t 2 -s 0" "$B/ubench/write_volume" -t 2 -n 600000000 -s 0
if [ -f "$W/wv.zst" ]; then
	row "trace bytes per record (data frames)" "$(awk '/^record data:/ {print $(NF-3)}' "$W/wv.info")" "<= 8"
	row "trace file size" "$(stat -c %s "$W/wv.zst") bytes" ""
fi
# A program that synchronizes often: the stencil kernel (tests/kernels/),
# 4 threads, a barrier per sweep (hundreds of thousands of context switches:
# what per-thread perf events and armed watchpoints pay for, see commrec(1),
# Costs).
RECORD_TARGET="<= 1.10x"
if [ -x "$B/kernels/stencil" ]; then
	recording_rows stencil "stencil -t 4, barrier per sweep" "$B/kernels/stencil" -t 4 -c 4096 \
		-s "${BENCH_SWEEPS:-50000}"
	# -w 0: what commrec does where watchpoints do not fire (the issues'
	# target machines): no debug registers, the probe's soft path
	REC_OPTS="-w 0" recording_rows stencil_w0 "stencil -t 4, -w 0" "$B/kernels/stencil" -t 4 \
		-c 4096 -s "${BENCH_SWEEPS:-50000}"
else
	row "recording (stencil, barrier per sweep)" "n/a ($B/kernels/stencil not built)" ""
fi
# Six compute-bound threads on the cores, no synchronization: three pairs
# storing to a line of their own (p2p).  Their context switches are the
# scheduler's (time slices), not waits.
if [ -x "$B/ubench/p2p" ]; then
	recording_rows p2p6 "p2p -t 6, 6 threads, no sync" "$B/ubench/p2p" -t 6 -n 100000000 -s 0.5
	REC_OPTS="-w 0" recording_rows p2p6_w0 "p2p -t 6, -w 0" "$B/ubench/p2p" -t 6 -n 100000000 \
		-s 0.5
else
	row "recording (p2p, six threads)" "n/a ($B/ubench/p2p not built)" ""
fi

# ---- recorded program RSS ------------------------------------------------------------
# A tiny program (the pipeline kernel, 2 threads, 10 buffers of 64 doubles):
# its peak RSS plain (/usr/bin/time) and under commrec (the trace's SUMMARY),
# soft on the plain build, inst sampled and inst --full on the commrec-cc
# build (against that build run plain).  What the difference is made of:
# commrec(1), "Memory of the recorded program".
rss_plain() { /usr/bin/time -f '%M' -o "$W/rss.one" "$@" >/dev/null 2>&1; tail -n 1 "$W/rss.one"; }
rss_rec() {
	rm -f "$W/rss.zst"
	"$REC" -q -f -o "$W/rss.zst" "$@" >/dev/null 2>&1 &&
		"$ANA" info "$W/rss.zst" 2>/dev/null | sed -n 's/^ *program_maxrss_kb=//p' | head -n 1
}
rss_row() {
	local label=$1 plain=$2 rec=$3
	if [ -n "$plain" ] && [ -n "$rec" ]; then
		row "recorded program RSS ($label)" "$plain / $rec KiB" ""
		row "  added" "$(( rec - plain )) KiB ($(ratio "$rec" "$plain"))" ""
	else
		row "recorded program RSS ($label)" "n/a" ""
	fi
}
K=$B/kernels
TINY=(-t 2 -i 10 -l 64)
if [ -x "$K/pipeline" ]; then
	rss_row "tiny, soft" "$(rss_plain "$K/pipeline" "${TINY[@]}")" \
		"$(rss_rec --sampler soft -- "$K/pipeline" "${TINY[@]}")"
fi
if [ -x "$K/pipeline-inst" ]; then
	p=$(rss_plain "$K/pipeline-inst" "${TINY[@]}")
	rss_row "tiny, inst" "$p" "$(rss_rec --sampler inst -- "$K/pipeline-inst" "${TINY[@]}")"
	rss_row "tiny, inst --full" "$p" "$(rss_rec --sampler inst --full -- "$K/pipeline-inst" "${TINY[@]}")"
fi

# ---- replay throughput -----------------------------------------------------------
big="$W/big.zst"
if [ -x "$B/tests/ana_mktrace" ]; then
	"$B/tests/ana_mktrace" "$big" big "${BENCH_RECORDS:-20000000}" >/dev/null 2>&1 || true
fi
if [ -f "$big" ]; then
	nrec=$("$ANA" info "$big" | awk -F'[ ,]+' '/^records:/ {print $2; exit}')
	# the physical limit of this design: decompressing the same trace
	command -v zstd >/dev/null && time_cmd raw zstd -d -c "$big"
	# -j1: one thread; -j2: frames decoded by a second thread, the merge
	# and the model in the first, which decodes frames too rather than
	# wait (doc/ARCHITECTURE.md, Parallel replay); every model that reads
	# sampled traces (exact: on the full trace, below)
	for model in comdetective window signature emulate; do
		for j in 1 2; do
			time_cmd "replay$j" "$ANA" matrix "$big" --model "$model" --format csv -o "$W/m.csv" -j "$j"
			target=""
			[ "$model" = comdetective ] && target=">= 34M"
			row "replay records/s ($model, -j$j)" "$(rate "$nrec" "$W/replay$j.sec")" "$target"
			row "  per CPU second (user + sys)" "$(rate "$nrec" "$W/replay$j.cpu")" ""
			row "  replay peak RSS" "$(cat "$W/replay$j.rss") KiB" ""
			[ -f "$W/raw.sec" ] &&
				row "  replay time / zstd -d time (CPU)" \
					"$(ratio "$(cat "$W/replay$j.sec")" "$(cat "$W/raw.sec")") ($(ratio "$(cat "$W/replay$j.cpu")" "$(cat "$W/raw.cpu")"))" ""
		done
	done
	[ -f "$W/raw.sec" ] &&
		row "raw decompression (zstd -d) records/s (per CPU s)" \
			"$(rate "$nrec" "$W/raw.sec") ($(rate "$nrec" "$W/raw.cpu"))" ""
else
	row "replay records/s" "n/a (no generator)" ">= 34M"
fi

# ---- many threads: analysis time and memory -----------------------------------------
# ana_mktrace threads N: N threads in a ring, N communicating pairs (of N x N)
if [ -x "$B/tests/ana_mktrace" ]; then
	echo
	echo "many threads (a ring: N communicating pairs): report and functions, one run each"
	for n in ${BENCH_THREADS:-1000 10000}; do
		"$B/tests/ana_mktrace" "$W/ring.zst" threads "$n" >/dev/null 2>&1 || continue
		REPEAT=1 time_cmd ring "$ANA" report "$W/ring.zst"
		row "report, $n threads: wall / peak RSS" "$(cat "$W/ring.sec") s / $(cat "$W/ring.rss") KiB" ""
		REPEAT=1 time_cmd ringf "$ANA" functions "$W/ring.zst"
		row "functions, $n threads: wall / peak RSS" "$(cat "$W/ringf.sec") s / $(cat "$W/ringf.rss") KiB" ""
	done
	rm -f "$W/ring.zst"
fi

# ---- peak analysis memory at 10,000 threads ------------------------------------------
# The same ring with a board that holds every line: each of the 10,000 pairs
# communicates (10,000 non-zero cells of 10^8), so every command that builds
# matrices holds them (sparse: doc/commanalyze.1) and writes them (triplets,
# the text's top cells, a density map).  The ring carries markers
# (ana_mktrace regions: a region "a" around a third of the loads, a second
# phase halfway), so regions, --node, the phases and the windows have
# matrices of their own; sweep compares its points with the reference
# (commanalyze's matrix comparison).  One run each.
if [ -x "$B/tests/ana_mktrace" ]; then
	n=${BENCH_SPARSE_THREADS:-10000}
	echo
	echo "peak analysis memory, a synthetic $n-thread trace ($n communicating pairs): one run each"
	if "$B/tests/ana_mktrace" "$W/ring.zst" regions "$n" >/dev/null 2>&1; then
		REPEAT=1 time_cmd sparse "$ANA" info "$W/ring.zst"
		row "  info: wall / peak RSS" "$(cat "$W/sparse.sec") s / $(cat "$W/sparse.rss") KiB" ""
		for c in "report" "matrix --format csv" "matrix --format svg" "matrix --format h5" \
			"regions" "regions --node a --format csv" "timeline" \
			"timeline --interval 10us --changes" "timeline --interval 10us --format h5" \
			"sweep --param period-multiplier=1,2" "html" "objects" \
			"objects --object unknown --format csv" "lines"; do
			REPEAT=1 time_cmd sparse "$ANA" $c "$W/ring.zst" --board-size 65536 -o "$W/sparse.out"
			# the target: below one dense matrix of 10,000 threads (10^8 cells, 781,250 KiB)
			row "  $c: wall / peak RSS" "$(cat "$W/sparse.sec") s / $(cat "$W/sparse.rss") KiB" \
				"< 781250 KiB"
		done
		rm -f "$W/ring.zst" "$W/sparse.out"
	fi
fi

# ---- sweep -----------------------------------------------------------------------
echo
echo "sweep: one decode pass for 64 grid points against 64 separate analyses"
B=$B tests/bench_sweep.sh

# ---- exact mode --------------------------------------------------------------------
echo
echo "exact mode (inst sampler, tests/inst/bench.c): slowdown against the plain -O2 build"
if [ -f "$B/libcommrec-inst.so" ]; then
	CT_BUILD="$PWD/$B" tests/inst/bench.sh
	echo "full recording per workload: --full (filtered) and --full=all (every access)"
	CT_BUILD="$PWD/$B" tests/inst/kbench.sh
	# exact replay speed on a full trace of the stream kernel
	CC=gcc COMMREC_INST_LIBDIR="$PWD/$B" record/commrec-cc -O2 -pthread tests/inst/bench.c -o "$W/ib" &&
	"$REC" -q -f --sampler inst --full=all -o "$W/full.zst" -- "$W/ib" 2 200 stream >/dev/null 2>&1
	if [ -f "$W/full.zst" ]; then
		nrec=$("$ANA" info "$W/full.zst" | awk -F'[ ,]+' '/^records:/ {print $2; exit}')
		echo
		command -v zstd >/dev/null && time_cmd fraw zstd -d -c "$W/full.zst"
		for j in 1 2; do
			time_cmd "exact$j" "$ANA" matrix "$W/full.zst" --model exact --format csv -o "$W/e.csv" -j "$j"
			row "exact replay records/s (-j$j)" "$(rate "$nrec" "$W/exact$j.sec")" ">= 51M"
			row "  per CPU second (user + sys)" "$(rate "$nrec" "$W/exact$j.cpu")" ""
			[ -f "$W/fraw.sec" ] &&
				row "  exact replay time / zstd -d time (CPU)" \
					"$(ratio "$(cat "$W/exact$j.sec")" "$(cat "$W/fraw.sec")") ($(ratio "$(cat "$W/exact$j.cpu")" "$(cat "$W/fraw.cpu")"))" ""
		done
		row "  full trace" "$nrec records" ""
		time_cmd fnfull "$ANA" functions "$W/full.zst" --model exact
		row "functions on the full trace: records/s" \
			"$(awk -v n="$nrec" -v s="$(cat "$W/fnfull.sec")" 'BEGIN{ if (s > 0) printf "%.1fM", n/s/1e6; else print "n/a" }')" ""
		row "  peak RSS" "$(cat "$W/fnfull.rss") KiB" ""
	fi
else
	echo "n/a: build/libcommrec-inst.so missing"
fi
