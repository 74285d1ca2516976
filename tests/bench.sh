#!/usr/bin/env bash
# make bench: the performance table.  Measures, never asserts: the targets
# (DESIGN.md) are printed beside the figures so a reader can judge.
#
#   recording   runtime and peak RSS under commrec (default period) / plain run
#   trace       bytes per sample in the trace (compressed)
#   replay      records per second for one configuration (comdetective model)
#   sweep       a 64-point sweep against 64 single analyses (tests/bench_sweep.sh)
#   exact       inst --full slowdown, bytes per access, exact replay speed
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

# time_cmd OUT_PREFIX CMD...: median wall seconds and max RSS (KiB) over REPEAT runs
time_cmd() {
	local pfx=$1; shift
	: >"$W/$pfx.t"
	for _ in $(seq "$REPEAT"); do
		/usr/bin/time -f '%e %M' -o "$W/$pfx.one" "$@" >/dev/null 2>"$W/$pfx.err" || true
		tail -n 1 "$W/$pfx.one" >>"$W/$pfx.t"
	done
	awk '{print $1}' "$W/$pfx.t" | median >"$W/$pfx.sec"
	awk '{print $2}' "$W/$pfx.t" | median >"$W/$pfx.rss"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3fx", a / b; else print "n/a" }'; }

echo "commtrace bench ($(nproc) cores, $(uname -r), repeat $REPEAT, median)"
row "measure" "value" "target"
row "-------" "-----" "------"

# ---- recording overhead ----------------------------------------------------------
prog=(tests/ubench/write_volume -t 2 -n 600000000 -s 0.2)
time_cmd plain "${prog[@]}"
time_cmd rec "$REC" -q -f -o "$W/wv.zst" -- "${prog[@]}"
row "recording runtime (write_volume -t 2)" "$(ratio "$(cat "$W/rec.sec")" "$(cat "$W/plain.sec")")" "<= 1.05x"
row "recording peak RSS" "$(ratio "$(cat "$W/rec.rss")" "$(cat "$W/plain.rss")")" "<= 1.05x"
row "  plain run" "$(cat "$W/plain.sec") s" ""
if [ -f "$W/wv.zst" ]; then
	"$ANA" info "$W/wv.zst" >"$W/wv.info"
	row "samples recorded" "$(awk -F'[ ,]+' '/^records:/ {print $4}' "$W/wv.info")" ""
	row "trace bytes per record (data frames)" "$(awk '/^record data:/ {print $(NF-3)}' "$W/wv.info")" "<= 8"
	row "trace file size" "$(stat -c %s "$W/wv.zst") bytes" ""
	row "added peak RSS" "$(( $(cat "$W/rec.rss") - $(cat "$W/plain.rss") )) KiB" ""
fi

# ---- replay throughput -----------------------------------------------------------
big="$W/big.zst"
if [ -x "$B/tests/ana_mktrace" ]; then
	"$B/tests/ana_mktrace" "$big" big "${BENCH_RECORDS:-20000000}" >/dev/null 2>&1 || true
fi
if [ -f "$big" ]; then
	nrec=$("$ANA" info "$big" | awk -F'[ ,]+' '/^records:/ {print $2; exit}')
	time_cmd replay "$ANA" matrix "$big" --format csv -o "$W/m.csv"
	row "replay records/s (comdetective, 1 core)" \
		"$(awk -v n="$nrec" -v s="$(cat "$W/replay.sec")" 'BEGIN{ if (s > 0 && n > 0) printf "%.1fM", n/s/1e6; else print "n/a" }')" ">= 20M"
else
	row "replay records/s" "n/a (no generator)" ">= 20M"
fi

# ---- sweep -----------------------------------------------------------------------
echo
echo "sweep: one decode pass for 64 grid points against 64 separate analyses"
B=$B tests/bench_sweep.sh

# ---- exact mode --------------------------------------------------------------------
if [ -x "$B/libcommrec-inst.so" ] || [ -f "$B/libcommrec-inst.so" ]; then
	if [ -x tests/bench_inst.sh ]; then
		B=$B tests/bench_inst.sh "$W" | while IFS='|' read -r a b c; do row "$a" "$b" "$c"; done
	fi
fi
