#!/usr/bin/env bash
# The line monitor (commrec --sampler inst --owner-window J) and the owner
# estimator on its records (commanalyze --estimator owner), on the pipeline
# kernel (tests/kernels/README.md): every buffer line travels from each
# stage to the next, ITEMS x THREADS x LEN*8/64 line transfers whatever the
# schedule (D below), plus the mailboxes' own (a few per item, which the
# schedule decides).
#   owner/records      the trace needs a format 4 reader (min_version 4 or
#                      later: 8, the short samples) for the monitor's
#                      records, and has them:
#                      windows opened, transfers seen
#   owner/refuse       --estimator owner on a trace without them (recorded
#                      with --owner-window 0), or with a model that cannot
#                      read them: refused, with the reason
#   owner/default_window  --sampler inst without --owner-window records with
#                      the monitor (CONFIG owner_window=32, commrec's
#                      default); --full without it does not
#   owner/auto         the analysis's default estimator (auto) is owner on a
#                      trace with monitor records (the same matrix as
#                      --estimator owner; the report and its JSON say so),
#                      and comdetective on one without (the same matrix as
#                      --estimator comdetective)
#   owner/attributed   the transfers the monitor saw are attributed like
#                      samples: the top object is the buffers' heap block
#                      (allocated in main), its accesses named by source line
#                      (the join keeps the symbols of the monitor's records)
#   owner/left_out     64 stages (65 threads): the 65th thread's accesses to
#                      monitored lines are not followed; the trace counts
#                      them (SUMMARY inst.owner_left_out) and the estimate
#                      warns
#   owner/volume       the estimate E against exact's X on a full recording
#                      of the same arguments (another execution):
#                      |E - X| <= 4.42 sd + 2 |X - D| + B L ceil(2J / 8):
#                      4.42 sd its sampling error at two-sided 1e-5 (sd from
#                      the report's own variance, i.e. from the number and
#                      weights of the windows' transfers), |X - D| exact's
#                      schedule-dependent part (mailboxes), allowed twice for
#                      the other execution, and the most the estimate can
#                      miss on the lines' first 2J stores (it assumes 2J stores
#                      before each transfer: B buffers x L lines, 8 stores a
#                      visit)
#                      The sampled recording must have lost no record (its
#                      writer falls behind on a loaded machine, and lost
#                      records take their transfers with them): recorded up
#                      to three times, else skipped with the counts
#   owner/same_execution commrec --full --owner-window J -c 100: one
#                      execution with both every access (exact) and the
#                      monitor's records: the same bound without the other
#                      execution's part (|X - D| once: the schedule-
#                      dependent part may run differently inside windows,
#                      where the monitor's lock serializes the line's
#                      accesses, doc/accuracy.md)
#   owner/split        tests/inst/relay.c (two threads take turns on a line:
#                      load word 0, store the 8 words; every transfer true
#                      sharing, a writer's tenure 8 stores), one execution
#                      with --full=all --owner-window 16 -c 200: exact's and
#                      the monitor's false sharing are both exactly 0 (a
#                      window holds the transfers J stores after its sampled
#                      store on, so it saw each one's tenure begin; without
#                      that lag a window that opened after the writer's
#                      store of word 0 called the next load false: 19.6%
#                      of the estimate on this VM)
#   owner/lag          tests/inst/short_lines.c (a writer stores each of L
#                      fresh lines 8 times, a reader then loads each once:
#                      one transfer a line, after 8 stores), one execution
#                      with --full=all --owner-window 16 -c 4: no window
#                      reaches its 16th store, so the windows hold no
#                      transfer (JSON held_transfers 0, estimate 0), their
#                      lags see them (SUMMARY inst.owner_lag_transfers),
#                      short_lines is true and the report warns; the lags'
#                      count weighed as the held are has expectation
#                      sum_x min(J, n_x) / J = 8 L / J here, and differs
#                      from it by at most 2 P / J + P / (J q) (counted:
#                      the lines' slots never close, 8 < 2J stores, so each
#                      window opened on a data line is in its lag at its
#                      line's one transfer and the lag's count is those
#                      windows, O_d, plus e, the windows x transfers on the
#                      globals' line; main stores `lines` once, so that
#                      line has O_m <= 1 window and e <= 2 transfers (the
#                      writer's and reader's first loads) only if it has
#                      one: |e - O_m| <= 1; the sampled stores S = O / q
#                      are the writer's 8 L / P, one per block of P, +-1,
#                      and main's <= 1: |S - 2L| <= 2 at P = 4; the lags
#                      weighed are (O_d + e) P / (J q) = S P / J + (e - O_m)
#                      P / (J q))
#   owner/lag_emulate  the same trace under --model emulate: its windows
#                      are its own, so the report has no lag test (no JSON
#                      lag fields, no warning)
#   owner/windows_emulate  and none of the recorded monitor's missed
#                      windows (4096 lines that never close for 256 slots:
#                      most sampled stores drop theirs, table full): no
#                      JSON model.owner_windows, no warning
#   owner/lag_steady   the pipeline's one execution (owner/same_execution):
#                      the lags' count and the held one agree within
#                      4.42 (sd_held + sd_lag) (two-sided 1e-5, the sd as
#                      the report computes them) plus the most the lines'
#                      first 2J stores can add to the lag's (its transfers
#                      there, B L ceil(2J / 8), each in at most J q / P
#                      windows on average: 1 / unit, the weight per
#                      window P / (J q), model_comdetective.c), and no
#                      warning
. "$(dirname "$0")/../lib.sh"

K="$CT_BUILD/kernels"
require owner "$COMMREC" "$COMMANALYZE" "$K/pipeline-inst" python3
printf 'int ct_owner_empty;\n' >"$WORK/empty.c"
gcc -shared -fPIC -o "$WORK/empty.so" "$WORK/empty.c" || { fail owner_setup "empty.so"; done_tests; }
export COMMTRACE_RUNTIME="$WORK/empty.so"
unset COMMTRACE_SPOOL COMMTRACE_PID

T=4 ITEMS=300 LEN=256 BUFS=4 J=16
ARGS=(-t $T -i $ITEMS -l $LEN -b $BUFS)
rec() {
	local name=$1; shift
	"$COMMREC" -q -f -o "$WORK/$name.zst" "$@" -- "$K/pipeline-inst" "${ARGS[@]}" \
		>"$WORK/$name.out" 2>"$WORK/$name.err" ||
		{ fail "owner/$name" "commrec: $(head -c 300 "$WORK/$name.err")"; done_tests; }
}
# lost NAME: the records NAME's recording lost (its writer fell behind)
lost() { "$COMMANALYZE" info "$WORK/$1.zst" 2>/dev/null | awk '/^lost records:/ { print $3 }'; }
rec full --sampler inst --full
# A sampled recording whose writer falls behind (a loaded machine) loses
# records, and the estimate with them (the report warns): owner/volume
# needs a whole one, so mon is recorded again, at most three times.
for try in 1 2 3; do
	rec mon --sampler inst -c 100 --owner-window $J
	[ "$(lost mon)" = 0 ] && break
done
rec plain --sampler inst -c 100 --owner-window 0
rec dflt --sampler inst -c 100

"$COMMANALYZE" info "$WORK/mon.zst" >"$WORK/mon.info" 2>&1
opened=$("$COMMANALYZE" dump --raw "$WORK/mon.zst" --type owner_win | grep -c ' opened$')
xfers=$("$COMMANALYZE" dump --raw "$WORK/mon.zst" --type owner_xfer | grep -c owner_xfer)
echo "INFO owner: $opened windows opened, $xfers transfers seen"
minv=$(sed -n 's/^format: .*(readable by \([0-9]*\) and later).*/\1/p' "$WORK/mon.info")
if [ "${minv:-0}" -ge 4 ] && [ "$opened" -gt 0 ] && [ "$xfers" -gt 0 ]; then
	pass owner/records
else
	fail owner/records "$(head -3 "$WORK/mon.info"); $opened windows, $xfers transfers"
fi

# refused: no monitor records; a model that does not read them
if ! "$COMMANALYZE" "$WORK/plain.zst" --estimator owner >"$WORK/r1" 2>&1 &&
	grep -q 'owner-window' "$WORK/r1" &&
	! "$COMMANALYZE" "$WORK/mon.zst" --estimator owner --model window >"$WORK/r2" 2>&1 &&
	grep -q 'owner-window' "$WORK/r2"; then
	pass owner/refuse
else
	fail owner/refuse "$(head -c 300 "$WORK/r1") | $(head -c 300 "$WORK/r2")"
fi

win() { "$COMMANALYZE" info "$WORK/$1.zst" 2>/dev/null | sed -n 's/^ *owner_window=//p'; }
check owner/default_window test "$(win dflt) $(win plain) $(win full)" = "32 0 0"

# matrix NAME OUT [options]: the matrix CSV of NAME's trace
matrix() { local n=$1 o=$2; shift 2; "$COMMANALYZE" matrix "$WORK/$n.zst" --format csv "$@" >"$WORK/$o" 2>/dev/null; }
matrix mon auto-mon.csv; matrix mon owner-mon.csv --estimator owner
matrix plain auto-plain.csv; matrix plain cd-plain.csv --estimator comdetective
"$COMMANALYZE" report "$WORK/mon.zst" --format json 2>/dev/null >"$WORK/auto.json"
"$COMMANALYZE" "$WORK/mon.zst" 2>/dev/null >"$WORK/auto.report"
if cmp -s "$WORK/auto-mon.csv" "$WORK/owner-mon.csv" && cmp -s "$WORK/auto-plain.csv" "$WORK/cd-plain.csv" &&
	grep -q '"estimator":"owner"},"estimator_source":"monitor"' "$WORK/auto.json" &&
	grep -q "estimator=owner" "$WORK/auto.report" &&
	grep -q "(estimator owner: the trace has the line monitor's records" "$WORK/auto.report"; then
	pass owner/auto
else
	fail owner/auto "matrices or the report's estimator: $(grep -o '"model":[^}]*}[^}]*}' "$WORK/auto.json")"
fi

top=$("$COMMANALYZE" objects "$WORK/mon.zst" --estimator owner 2>/dev/null | awk '$1 == 1 { print $2; exit }')
if [[ "$top" == heap:main* ]] &&
	"$COMMANALYZE" lines "$WORK/mon.zst" --estimator owner 2>/dev/null | grep -q 'stage (pipeline\.c:[0-9]*)'; then
	pass owner/attributed
else
	fail owner/attributed "top object '$top' (want heap:main...), or no stage (pipeline.c:N) in the lines"
fi

"$COMMREC" -q -f -o "$WORK/m64.zst" --sampler inst -c 100 --owner-window $J -- "$K/pipeline-inst" \
	-t 64 -i 50 -l 64 >"$WORK/m64.out" 2>"$WORK/m64.err"
left=$("$COMMANALYZE" info "$WORK/m64.zst" 2>/dev/null | sed -n 's/^  inst.owner_left_out=//p')
if [ "${left:-0}" -gt 0 ] &&
	"$COMMANALYZE" report "$WORK/m64.zst" --estimator owner 2>&1 >/dev/null | grep -q "$left accesses to monitored lines were not followed"; then
	pass owner/left_out
else
	fail owner/left_out "inst.owner_left_out '${left}', or no warning: $(head -c 300 "$WORK/m64.err")"
fi

# the volume: exact without the accesses that libc's synchronization calls
# imply (the sampled recording's monitor does not see them)
if [ "$(lost mon)" != 0 ]; then
	skip owner/volume "three recordings lost records (the last $(lost mon)): the writer fell behind on a loaded machine, so the estimate misses their transfers"
else
"$COMMANALYZE" report "$WORK/full.zst" --model exact --sync exclude --format json >"$WORK/x.json" &&
	"$COMMANALYZE" report "$WORK/mon.zst" --estimator owner --format json >"$WORK/e.json" ||
	{ fail owner/volume "commanalyze report failed"; done_tests; }
out=$(python3 - "$WORK/x.json" "$WORK/e.json" $T $ITEMS $LEN $BUFS $J <<'PY'
import json, math, sys
x = json.load(open(sys.argv[1]))['totals']['transfers']
t = json.load(open(sys.argv[2]))['totals']
T, items, length, bufs, j = map(int, sys.argv[3:8])
lines = length * 8 // 64
d = items * T * lines
e, sd = t['transfers'], math.sqrt(t['variance'])
bound = 4.42 * sd + 2 * abs(x - d) + bufs * lines * math.ceil(2 * j / 8)
print(f"INFO owner: estimate {e:.0f} (sd {sd:.0f}), exact {x:.0f}, data flow {d}, bound {bound:.0f}")
print("PASS owner/volume" if abs(e - x) <= bound else
      f"FAIL owner/volume: |{e:.0f} - {x:.0f}| > {bound:.0f}")
PY
)
echo "$out"
grep -q '^PASS owner/volume' <<<"$out" || ct_failed=1
fi

# one execution: every access and the monitor's records in one trace
rec same --sampler inst --full --owner-window $J -c 100
"$COMMANALYZE" report "$WORK/same.zst" --model exact --sync exclude --format json >"$WORK/sx.json" &&
	"$COMMANALYZE" report "$WORK/same.zst" --estimator owner --format json >"$WORK/se.json" ||
	{ fail owner/same_execution "commanalyze report failed"; done_tests; }
out=$(python3 - "$WORK/sx.json" "$WORK/se.json" $T $ITEMS $LEN $BUFS $J <<'PY'
import json, math, sys
xt = json.load(open(sys.argv[1]))['totals']
t = json.load(open(sys.argv[2]))['totals']
T, items, length, bufs, j = map(int, sys.argv[3:8])
lines = length * 8 // 64
d = items * T * lines
x, e, sd = xt['transfers'], t['transfers'], math.sqrt(t['variance'])
bound = 4.42 * sd + abs(x - d) + bufs * lines * math.ceil(2 * j / 8)
print(f"INFO owner: one execution: estimate {e:.0f} (sd {sd:.0f}), exact {x:.0f}, bound {bound:.0f}; "
      f"false {t['false']:.0f} against exact's {xt['false']:.0f}")
print("PASS owner/same_execution" if abs(e - x) <= bound else
      f"FAIL owner/same_execution: |{e:.0f} - {x:.0f}| > {bound:.0f}")
PY
)
echo "$out"
grep -q '^PASS owner/same_execution' <<<"$out" || ct_failed=1

out=$(python3 - "$WORK/se.json" $LEN $BUFS $J <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
w, t = d['model']['owner_windows'], d['totals']
length, bufs, j = map(int, sys.argv[2:5])
lag, held = w['lag_transfers'], w['held_transfers']
unit = w['lag_estimate'] / lag if lag else 1    # one counted transfer's weight, P / (J q)
sd_held = math.sqrt(t['variance']) / unit
per = max(1.0, sd_held ** 2 / held) if held else 1.0
sd_lag = math.sqrt(lag * per)
young = bufs * (length * 8 // 64) * math.ceil(2 * j / 8) / unit   # J q / P = 1 / unit each
bound = 4.42 * (sd_held + sd_lag) + young
warned = any('estimate is low' in x for x in d['warnings'])
print(f"INFO owner: pipeline, one execution: lag {lag}, held {held}, bound {bound:.0f}, "
      f"short_lines {w['short_lines']}")
print("PASS owner/lag_steady" if abs(lag - held) <= bound and not warned else
      f"FAIL owner/lag_steady: |{lag} - {held}| > {bound:.0f}, or warned: {warned}")
PY
)
echo "$out"
grep -q '^PASS owner/lag_steady' <<<"$out" || ct_failed=1

LINES=4096
if CC=gcc "$CT_ROOT/record/commrec-cc" -O1 -pthread "$CT_ROOT/tests/inst/short_lines.c" \
	-o "$WORK/short_lines" 2>"$WORK/sl.cc.err" &&
	"$COMMREC" -q -f -o "$WORK/sl.zst" --sampler inst --full=all --owner-window 16 -c 4 \
		-- "$WORK/short_lines" $LINES >"$WORK/sl.out" 2>"$WORK/sl.err" &&
	"$COMMANALYZE" report "$WORK/sl.zst" --estimator owner --format json >"$WORK/sl.json" \
		2>/dev/null; then
	out=$(python3 - "$WORK/sl.json" $LINES 16 4 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
w, t = d['model']['owner_windows'], d['totals']
lines, j, p = map(int, sys.argv[2:5])
lag, held, low = w['lag_transfers'], w['held_transfers'], w['lag_estimate']
want = 8 * lines / j
unit = low / lag if lag else 0      # P / (J q): no transfer held
tol = 2 * p / j + unit              # counted in the header
warned = any('estimate is low' in x for x in d['warnings'])
print(f"INFO owner: short lines: lag {lag}, held {held}, estimate {t['transfers']:.0f}, "
      f"lags weighed {low:.2f} (want {want:.0f} +- {tol:.2f})")
ok = held == 0 and t['transfers'] == 0 and lag > 0 and w['short_lines'] and warned \
	and abs(low - want) <= tol
print("PASS owner/lag" if ok else f"FAIL owner/lag: {w}, warned {warned}")
PY
)
	echo "$out"
	grep -q '^PASS owner/lag' <<<"$out" || ct_failed=1
	"$COMMANALYZE" report "$WORK/sl.zst" --model emulate --estimator owner --format json \
		>"$WORK/sle.json" 2>/dev/null
	em=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); w = d["warnings"]
print("lag_transfers" in d["model"].get("owner_windows", {}) or
      any("estimate is low" in x for x in w),
      "owner_windows" in d["model"] or any("opened no window" in x for x in w))' \
		"$WORK/sle.json" 2>&1)
	check owner/lag_emulate test "${em% *}" = False
	check owner/windows_emulate test "$em" = "False False"
else
	fail owner/lag "$(head -c 300 "$WORK/sl.cc.err" "$WORK/sl.err")"
fi

if ! CC=gcc "$CT_ROOT/record/commrec-cc" -O1 -pthread "$CT_ROOT/tests/inst/relay.c" \
	-o "$WORK/relay" 2>"$WORK/relay.cc.err"; then
	fail owner/split "commrec-cc: $(head -c 300 "$WORK/relay.cc.err")"
	done_tests
fi
"$COMMREC" -q -f -o "$WORK/relay.zst" --sampler inst --full=all --owner-window 16 -c 200 \
	-- "$WORK/relay" 20000 >"$WORK/relay.out" 2>"$WORK/relay.err" ||
	{ fail owner/split "commrec: $(head -c 300 "$WORK/relay.err")"; done_tests; }
xf=$("$COMMANALYZE" report "$WORK/relay.zst" --model exact --sync exclude --format json |
	python3 -c 'import json, sys; t = json.load(sys.stdin)["totals"]; print(t["transfers"], t["false"])')
of=$("$COMMANALYZE" report "$WORK/relay.zst" --estimator owner --format json |
	python3 -c 'import json, sys; t = json.load(sys.stdin)["totals"]; print(t["transfers"], t["false"])')
echo "INFO owner: relay: exact transfers / false $xf, monitor $of"
if [ "${xf#* }" = 0 ] && [ "${of#* }" = 0 ] && [ "${of%% *}" != 0 ]; then
	pass owner/split
else
	fail owner/split "false sharing: exact ${xf#* } and the monitor ${of#* } (want 0 and 0)"
fi
done_tests
