#!/usr/bin/env bash
# commanalyze's command line on hand-built traces (written by the unit test
# helper ana_mktrace): info, dump (exact lines and filters), report, matrix,
# usage errors (exit 1) and malformed traces (exit 2, one line naming the
# file, never a crash).  Uses $CT_BUILD, so an ASAN build is tested by
# pointing CT_BUILD (B=) at it.
. "$(dirname "$0")/../lib.sh"

MK="$CT_BUILD/tests/ana_mktrace"
A="$COMMANALYZE"
if [ ! -x "$A" ] || [ ! -x "$MK" ]; then
	skip analyze_cli "build $A and $MK first"
	exit 0
fi
G="$WORK/basic.zst"
"$MK" "$G" basic || { fail mktrace "ana_mktrace basic failed"; done_tests; }
"$MK" "$WORK/incomplete.zst" incomplete || fail mktrace_incomplete

# run NAME EXPECTED-STATUS CMD...: stdout in $WORK/out, stderr in $WORK/err
run() {
	local name=$1 want=$2; shift 2
	local rc=0
	"$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$name" "exit $rc, expected $want: $* ($(head -c 300 "$WORK/err"))"
		return 1
	fi
	return 0
}

# ---- dump: the exact lines -------------------------------------------------
cat >"$WORK/dump.want" <<'EOF'
10 T0 thread_start stack=0x7ff000000000-0x7ff000800000 fs=0x7f0000001000 tls=0x7f0000000f00-0x7f0000001100
15 T1 thread_start stack=0x7fe000000000-0x7fe000800000 fs=0x7e0000001000 tls=0x0-0x0
20 T0 callsite id=7 pcs=0x401000,0x402abc,0x7f00deadbeef
30 T0 alloc addr=0x10000 size=4096 kind=malloc callsite=7
100 T0 sample ip=0x400000 addr=0x10000 len=8 kind=store cpu=0 period=1000 flags=exact
110 T0 marker kind=begin name=solve
120 T0 lost reason=buffer_full count=5
130 T0 skipped reason=decode_failed count=3
150 T0 func_enter addr=0x401100
160 T0 func_exit addr=0x0
200 T1 sample ip=0x400008 addr=0x10008 len=4 kind=load cpu=1 period=1000 flags=exact,data_src,weight data_src=0x68100142 weight=57
200 T1 wp_arm publisher=0 pub_time=100 pub_addr=0x10000 pub_len=8 wp=0x10000:8,0x10008:8
250 T1 wp_hit ip=0x401000 addr=0x10000 len=8 reg=0 cpu=1 kind=load
300 T1 sample ip=0x400000 addr=0x10000 len=8 kind=atomic cpu=1 period=1000 flags=reconstructed,prev,fs
400 T2 alloc addr=0x20000 size=64 kind=realloc callsite=7 old=0x10000
410 T2 alloc addr=0x7f1000000000 size=1048576 kind=mmap callsite=0
420 T2 free addr=0x7f1000000000 size=1048576 kind=munmap
430 T2 marker kind=phase name=phase\x202
500 T2 sample ip=0x400004 addr=0x10004 len=2 kind=load cpu=3 period=1000 flags=exact
510 T2 skipped reason=kernel count=1
900 T0 free addr=0x10000 size=0 kind=free
990 T1 thread_end status=11
1000 T0 thread_end status=0
EOF
if run dump_exact 0 "$A" dump "$G" --raw; then
	if diff -u "$WORK/dump.want" "$WORK/out" >"$WORK/diff"; then
		pass dump_exact
	else
		fail dump_exact "$(head -20 "$WORK/diff" | tr '\n' '|')"
	fi
fi
# every line: TIME T<n> TYPE key=value...
check dump_line_shape bash -c "grep -Evq '^[0-9]+ T[0-9]+ [a-z_]+( [a-z_]+=[^ ]+)*\$' '$WORK/out' && exit 1 || exit 0"

# the default, as perf script: seconds since the earliest thread start (1 ns
# here), 9 decimals; pub_time too
run dump_relative 0 "$A" dump "$G" --type sample,wp_arm &&
	check dump_relative_first test "$(head -1 "$WORK/out" | cut -d' ' -f1-3)" = "0.000000099 T0 sample" &&
	check dump_relative_pub grep -q '^0.000000199 T1 wp_arm publisher=0 pub_time=0.000000099 ' "$WORK/out" &&
	check dump_relative_shape bash -c "grep -Evq '^[0-9]+\.[0-9]{9} T[0-9]+ [a-z_]+( [a-z_]+=[^ ]+)*\$' '$WORK/out' && exit 1 || exit 0"
# symbols from the trace's embedded symbol table (the bundled p2p trace:
# its workers store in work())
P2P="$CT_ROOT/datasets/p2p-4t.zst"
if [ -f "$P2P" ]; then
	run dump_symbols 0 "$A" dump "$P2P" --type sample,callsite --limit 40 &&
		check dump_sym_sample grep -Eq '^[0-9.]+ T[1-4] sample ip=0x[0-9a-f]+ sym=work\+0x[0-9a-f]+ addr=' "$WORK/out" &&
		check dump_syms_callsite grep -Eq ' callsite id=[0-9]+ pcs=[0-9a-fx,]+ syms=([^ ,]+,)*main\+0x[0-9a-f]+' "$WORK/out"
	run dump_raw_nosym 0 "$A" dump "$P2P" --raw --type sample --limit 5 &&
		check dump_raw_nosym_out bash -c "grep -q ' sym=' '$WORK/out' && exit 1; grep -Eq '^[0-9]+ T' '$WORK/out'"
else
	skip dump_symbols "no $P2P"
fi
run dump_type 0 "$A" dump "$G" --type sample &&
	check dump_type_count test "$(wc -l <"$WORK/out")" -eq 4 &&
	check dump_type_only bash -c "! grep -v ' sample ' '$WORK/out'"
run dump_types 0 "$A" dump "$G" --type wp_arm,wp_hit &&
	check dump_types_count test "$(wc -l <"$WORK/out")" -eq 2
run dump_thread 0 "$A" dump "$G" --thread 1 &&
	check dump_thread_count test "$(wc -l <"$WORK/out")" -eq 6 &&
	check dump_thread_only bash -c "! grep -v '^[0-9.]* T1 ' '$WORK/out'"
run dump_thread_type 0 "$A" dump "$G" --thread 2 --type=alloc &&
	check dump_thread_type_count test "$(wc -l <"$WORK/out")" -eq 2
run dump_limit 0 "$A" dump "$G" --limit 3 --raw &&
	check dump_limit_lines cmp -s "$WORK/out" <(head -n 3 "$WORK/dump.want")
run dump_limit0 0 "$A" dump "$G" --limit 0 &&
	check dump_limit0_empty test ! -s "$WORK/out"

# ---- info -------------------------------------------------------------------
if run info 0 "$A" info "$G"; then
	check info_complete grep -qx 'complete: yes' "$WORK/out"
	# the version this build writes (formats/commtrace.h)
	fv=$(sed -n 's/^#define CT_FORMAT_VERSION \([0-9]*\).*/\1/p' "$CT_ROOT/formats/commtrace.h")
	check info_version grep -q "^format: version $fv (readable by 1 and later)" "$WORK/out"
	check info_threads grep -Eq '^ +2 +1002 +1 +t2 +6 +1 ' "$WORK/out"
	check info_lost grep -Eq '^ +buffer_full +5$' "$WORK/out"
	check info_skipped grep -Eq '^ +decode_failed +3$' "$WORK/out"
	check info_machine grep -q 'cpu map: 4 cpus, 4 cores, 2 sockets' "$WORK/out"
	check info_cmdline grep -qx 'command: ./app --threads 2' "$WORK/out"
	check info_exit grep -qx 'exit status: 0' "$WORK/out"
fi
# -o FILE as every command: the same text, json
run info_o 0 "$A" info "$G" -o "$WORK/info.txt" &&
	check info_o_same bash -c "'$A' info '$G' | cmp -s - '$WORK/info.txt'"
run info_qo_json 0 "$A" info "$G" --format json -qo "$WORK/info.json" &&
	check info_qo_json_file grep -q '"schema":"commtrace-info/1"' "$WORK/info.json"
run dump_o 0 "$A" dump "$G" --raw -o "$WORK/dump.o" &&
	check dump_o_same cmp -s "$WORK/dump.want" "$WORK/dump.o"
run info_o_unwritable 2 "$A" info "$G" -o "$WORK/nodir/x" &&
	check info_o_unwritable_msg grep -q "cannot write $WORK/nodir/x" "$WORK/err"
if run info_incomplete 0 "$A" info "$WORK/incomplete.zst"; then
	check info_incomplete_line grep -qx 'complete: no' "$WORK/out"
	check info_incomplete_why grep -q 'cut off' "$WORK/out"
fi

# ---- report -------------------------------------------------------------------
if run report 0 "$A" "$G"; then
	for s in Trace Model Totals 'Top thread pairs' 'Cores and sockets' 'Lost and skipped' Warnings More; do
		check "report_section_${s// /_}" grep -q "^== $s ==" "$WORK/out"
	done
	check report_pair grep -q 'T0(1000) <-> T1(1001)' "$WORK/out"
	check report_true grep -Eq '^ +true sharing +83\.3%' "$WORK/out"
	check report_loss_warning grep -q 'high loss' "$WORK/out"
	# what a reader needs: the sampler in words, the transfer rate, what a
	# transfer is, the true/false split explained, thread ids in the pairs,
	# the statistical caveat, and where to look next
	check report_sampler_line grep -Eq '^  sampler +soft: a sample every 1000 events; 4 watchpoint registers$' "$WORK/out"
	check report_rate grep -Eq '^  estimated line transfers +6\.00k +[0-9.]+[kMGT]?/s over the run$' "$WORK/out"
	check report_transfer_defined grep -q 'a line transfer: a cache line moving from the thread that wrote it' "$WORK/out"
	check report_false_explained grep -Eq '^ +false sharing +16\.7% +1\.00k +different bytes of one line ' "$WORK/out"
	# 90% intervals: weights 4000, 1000, 1000 (var V = sum w(w-1) = 17.994M)
	# make n = T^2 / V = 2.0 effective events; Fay and Feuer's interval:
	# low = chi2(0.05; 2n) / 2 x V / T = 0.3554 x 2999 = 1.07k, high with one
	# more unit of the largest weight (4000): shape (T + 4000)^2 / (V + 4000^2)
	# = 2.94, chi2(0.95; 5.88) / 2 = 6.22, x (V + 4000^2) / (T + 4000) = 3399:
	# 21.1k
	check report_volume_interval grep -Eq '^    90% interval +1\.07k to 21\.1k \(from 2 effective events\)$' "$WORK/out"
	check report_share_interval grep -Eq '^ +true sharing +83\.3% .*\(90%: 30\.0-98\.3%\)$' "$WORK/out"
	check report_pair_interval grep -Eq 'T0\(1000\) <-> T1\(1001\) .* 30\.0-98\.3%$' "$WORK/out"
	check report_few_events grep -q 'too few events to say anything: 3 communication events (2 effective' "$WORK/out"
	check report_skip_split grep -q "1 not user memory accesses (normal), 0 in the recorder's runtime, 3 accesses without an address" "$WORK/out"
	check report_more_section bash -c "sed -n '/^== More ==/,\$p' '$WORK/out' | grep -q '^  commanalyze matrix $G '"
	check report_more_objects grep -q "^  commanalyze objects $G " "$WORK/out"
	check report_width bash -c "! grep -n '^  - .\{97\}' '$WORK/out'"
fi

# ---- report: what the recording machine could do ------------------------------
# recorded where watchpoints do not fire (commrec's probe), a throttled
# thread, samples in the runtime (ana_mktrace nofire)
"$MK" "$WORK/nofire.zst" nofire || fail mktrace_nofire
if run report_nofire 0 "$A" report "$WORK/nofire.zst"; then
	check report_nofire_warning grep -q 'watchpoints do not fire on the machine this trace was recorded on' "$WORK/out"
	# (warnings are wrapped: joined here)
	check report_nofire_detail bash -c "tr -s '\n ' ' ' <'$WORK/out' | grep -q \"commrec's probe: 4 of 4 debug registers opened; none counted\""
	check report_nofire_not_w4 bash -c "! grep -q 'commrec -w 4' '$WORK/out'"
	check report_throttled_line grep -Eq '^  throttled +1 of 2 threads: period lengthened up to 200 us of CPU time$' "$WORK/out"
	check report_throttled_warning grep -q 'the recorder throttled the sampling of 1 thread' "$WORK/out"
	check report_runtime_skips grep -q "30 in the recorder's runtime, 0 accesses without an address" "$WORK/out"
	check report_runtime_warning grep -q "27.3% of the samples fell inside the recorder's runtime" "$WORK/out"
fi
# the watchpoint advice is for comdetective on sampled traces only
if run report_nofire_window 0 "$A" report "$WORK/nofire.zst" --model window; then
	check report_window_no_wp_warning bash -c "! grep -q 'watchpoints do not fire' '$WORK/out'"
fi
"$MK" "$WORK/fullwp0.zst" fullwp0 || fail mktrace_fullwp0
for m in exact emulate; do
	if run "report_full_$m" 0 "$A" report "$WORK/fullwp0.zst" --model "$m"; then
		check "report_full_${m}_no_wp_warning" bash -c "! grep -Eq 'watchpoints (were off|do not fire)|commrec -w' '$WORK/out'"
	fi
done
# many arms and no hit where the probe said they fire
"$MK" "$WORK/armsnohit.zst" armsnohit || fail mktrace_armsnohit
if run report_armsnohit 0 "$A" report "$WORK/armsnohit.zst"; then
	check report_arms_no_hit grep -q '160 watchpoint arms and not one hit' "$WORK/out"
fi
# the same with software watchpoints (inst): they cannot fail to fire
"$MK" "$WORK/armsnohitsoft.zst" armsnohitsoft || fail mktrace_armsnohitsoft
if run report_armsnohit_soft 0 "$A" report "$WORK/armsnohitsoft.zst"; then
	check report_arms_no_hit_soft bash -c "tr -s '\n ' ' ' <'$WORK/out' | grep -q '160 software watchpoint arms and not one hit: .* no other thread touched the watched lines'"
	check report_arms_no_hit_soft_no_debugreg bash -c "! grep -q 'debug registers' '$WORK/out'"
fi
# threads and not one sample: said in the warnings, text and JSON
"$MK" "$WORK/nosamples.zst" nosamples || fail mktrace_nosamples
if run report_nosamples 0 "$A" report "$WORK/nosamples.zst"; then
	check report_nosamples_threads grep -q '^  threads       2 (0 with samples)$' "$WORK/out"
	check report_nosamples_warning bash -c "tr -s '\n ' ' ' <'$WORK/out' | grep -q 'no access was sampled: 2 threads recorded, not one sample.* exec.d another program.* commrec-cc.* too briefly'"
fi
run report_nosamples_json 0 "$A" report "$WORK/nosamples.zst" --format json &&
	check report_nosamples_json_warning grep -q '"no access was sampled: 2 threads recorded' "$WORK/out"
# the owner estimator where the line monitor opened 1 window of 3: the
# transfers weighed x 3 for the missed ones (15 x 3 = 45), said in the
# warnings, and in JSON
"$MK" "$WORK/owner.zst" owner || fail mktrace_owner
if run report_owner_missed 0 "$A" report "$WORK/owner.zst" --estimator owner; then
	check report_owner_volume grep -q '^  estimated line transfers   45 ' "$WORK/out"
	check report_owner_interval_says grep -q '^    90% interval .*, the missed windows weighed for)$' "$WORK/out"
	check report_owner_missed_warning bash -c "tr -s '\n ' ' ' <'$WORK/out' | grep -q 'opened no window for 2 of 3 sampled stores (1: its table was full, 1: their line had its most windows open): the owner estimate weighs each opened window.s transfers x 1/q for them, .*(33.3% over the run: x 3.0), assuming a missed window would have seen what an opened one saw.* its 1 missed windows may have held more'"
fi
if run report_owner_json 0 "$A" report "$WORK/owner.zst" --estimator owner --format json; then
	check report_owner_json_warning grep -q '"the line monitor opened no window for 2 of 3 sampled stores' "$WORK/out"
	check report_owner_json_windows grep -q '"owner_windows":{"opened":1,"dropped_table_full":1,"dropped_line_full":1,"inclusion":0.33333' "$WORK/out"
	check report_owner_json_volume grep -q '"transfers":45,' "$WORK/out"
fi
# no window opened: nothing to weigh, and the warning says so
"$MK" "$WORK/ownernone.zst" ownernone || fail mktrace_ownernone
if run report_owner_none 0 "$A" report "$WORK/ownernone.zst"; then
	check report_owner_none_warning bash -c "tr -s '\n ' ' ' <'$WORK/out' | grep -q 'opened no window for any of the 3 sampled stores (3: its table was full, 0: their line had its most windows open): the owner estimate has nothing to weigh'"
fi
# --estimator auto (the default) as it resolved, in every attribute-based
# output: owner on the monitor trace, comdetective on the others (as before
# the default changed); under owner, the options only ComDetective's step
# reads are left out
if run matrix_estimator_owner 0 "$A" matrix "$WORK/owner.zst"; then
	check matrix_estimator_resolved grep -q '^  estimator: owner$' "$WORK/out"
	check matrix_owner_no_board bash -c "! grep -qE '^  (board-size|expiry|hash|watchpoints|period-multiplier):' '$WORK/out'"
fi
run matrix_estimator_owner_json 0 "$A" matrix "$WORK/owner.zst" --format json &&
	check matrix_estimator_resolved_json grep -q "\"estimator\": \"owner\"," "$WORK/out"
if run matrix_estimator_default 0 "$A" matrix "$G"; then
	check matrix_estimator_comdetective grep -q '^  estimator: comdetective$' "$WORK/out"
	check matrix_comdetective_board grep -q '^  board-size: 127$' "$WORK/out"
fi
run html_estimator_owner 0 "$A" html "$WORK/owner.zst" -o "$WORK/own.html" &&
	check html_estimator_one_name bash -c "[ \"\$(grep -o 'estimator=[a-z]*' '$WORK/own.html' | sort -u)\" = estimator=owner ]"
# the owner path reads only the monitor's records: ComDetective's options
# change nothing in it, the report leaves them out of its Model line, and a
# given one is warned about once
run matrix_owner_plain 0 "$A" matrix "$WORK/owner.zst" --format csv && cp "$WORK/out" "$WORK/own_plain.csv"
if run matrix_owner_cd_opts 0 "$A" matrix "$WORK/owner.zst" --format csv --board-size 1 --hash murmur \
	--expiry ns:1 --watchpoints 0 --period-multiplier 3; then
	check owner_cd_opts_no_effect cmp -s "$WORK/out" "$WORK/own_plain.csv"
	check owner_cd_opts_warned bash -c "[ \$(grep -c 'has no effect with the owner estimator; --estimator comdetective to use it' '$WORK/err') = 5 ]"
fi
if run report_owner_board 0 "$A" report "$WORK/owner.zst" --board-size 63; then
	check report_owner_model_line grep -q '^  comdetective: line-size=64 estimator=owner$' "$WORK/out"
	check report_owner_board_warned grep -qx 'commanalyze: warning: --board-size 63 has no effect with the owner estimator; --estimator comdetective to use it' "$WORK/err"
fi
"$MK" "$WORK/ownerlw.zst" ownerlw || fail mktrace_ownerlw
run report_owner_k2 0 "$A" report "$WORK/ownerlw.zst" --period-multiplier 2 &&
	check report_owner_k2_no_linewatch_warning bash -c "! grep -q 'cannot stand for a 2 times longer period' '$WORK/out'"
run report_cd_k2 0 "$A" report "$WORK/ownerlw.zst" --period-multiplier 2 --estimator comdetective &&
	check report_cd_k2_linewatch_warning bash -c "tr -s '\n ' ' ' <'$WORK/out' | grep -q 'cannot stand for a 2 times longer period'"
# sweep: a parameter the owner estimator ignores at every point is refused;
# with the comdetective estimator it sweeps
if run sweep_owner_board_refused 1 "$A" sweep "$WORK/owner.zst" --param board-size=63,127; then
	check sweep_owner_board_message grep -q "sweep: --param board-size has no effect with the owner estimator, which every point runs with on $WORK/owner.zst (--estimator auto: its line monitor records); --estimator comdetective to sweep it" "$WORK/err"
fi
run sweep_cd_board 0 "$A" sweep "$WORK/owner.zst" --param board-size=63,127 --estimator comdetective
run sweep_owner_fixed_board 0 "$A" sweep "$WORK/owner.zst" --board-size 63 --param line-size=64,128 &&
	check sweep_owner_fixed_board_warned bash -c "[ \$(grep -c -- '--board-size 63 has no effect with the owner estimator' '$WORK/err') = 1 ]"
run sweep_estimator_board 0 "$A" sweep "$WORK/owner.zst" --param board-size=63,127 --param estimator=comdetective,owner
# a model's warning once per sweep, not once per point, each a whole line
if run sweep_warning_once 0 "$A" sweep "$WORK/owner.zst" --param line-size=64,128,256 -j 2; then
	check sweep_warning_once_count bash -c "[ \$(grep -c 'line monitor: 2 of 3 sampled stores opened no window' '$WORK/err') = 1 ]"
	check sweep_warning_lines_whole bash -c "! grep -v '^commanalyze: ' '$WORK/err'"
fi
if command -v h5dump >/dev/null && "$A" sweep "$WORK/owner.zst" --param line-size=64,128 -q -o "$WORK/own.h5" 2>/dev/null; then
	check sweep_h5_fixed_estimator bash -c "h5dump -a /fixed:estimator '$WORK/own.h5' | grep -q '\"owner\"'"
	check sweep_h5_opt_estimator bash -c "h5dump -A '$WORK/own.h5' | grep -A9 'ATTRIBUTE \"opt:estimator\"' | grep '(0)' | sort -u | grep -q '^ *(0): \"owner\"$'"
	check sweep_h5_no_board bash -c "! h5dump -A '$WORK/own.h5' | grep -q 'board-size'"
else
	skip sweep_h5_fixed_estimator "needs h5dump and an HDF5 build"
fi
# a soft-sampler trace (periods in CPU time): the totals are relative, and say so
LC_ALL=C sed 's/period_unit=events/period_unit=us-cpu/' "$G" >"$WORK/soft.zst"
if run report_soft 0 "$A" "$WORK/soft.zst"; then
	check report_soft_sampler grep -q 'a sample every 1000 us of CPU time per thread' "$WORK/out"
	check report_soft_relative grep -q 'relative only: soft sampler periods are CPU time' "$WORK/out"
	check report_soft_warning grep -q 'soft sampler: a sample stands for CPU time' "$WORK/out"
fi
run report_cmd 0 "$A" report "$G" --model window --window 1ms
if run report_incomplete 0 "$A" report "$WORK/incomplete.zst"; then
	check report_incomplete_warning grep -q 'incomplete trace' "$WORK/out"
	# cut off: how many threads are there and how many were cut (T2 has no end)
	check report_incomplete_threads bash -c "tr -s '\n ' ' ' <'$WORK/out' | grep -q 'threads may be missing: the trace holds 3 threads (1 without an end record: cut off)'"
fi
run report_complete_no_missing 0 "$A" report "$G" &&
	check report_complete_no_missing_threads bash -c "! grep -q 'threads may be missing\|threads the program started' '$WORK/out'"
# the summary says 5 threads started, 3 have records
"$MK" "$WORK/unrecorded.zst" unrecorded || fail mktrace_unrecorded
if run report_unrecorded 0 "$A" report "$WORK/unrecorded.zst"; then
	check report_unrecorded_threads bash -c "tr -s '\n ' ' ' <'$WORK/out' | grep -q '2 of the 5 threads the program started have no records in the trace'"
fi

# full-trace models on a sampled trace: a warning (report: Warnings section;
# matrix: one line on stderr and the attribute "warning"); none for comdetective
if run report_exact_sampled 0 "$A" report "$G" --model exact; then
	check report_exact_warning bash -c "sed -n '/^== Warnings ==/,\$p' '$WORK/out' | grep -q 'the exact model needs a full trace'"
fi
if run report_cd_nowarn 0 "$A" report "$G"; then
	check report_cd_no_full_warning bash -c "! grep -q 'needs a full trace' '$WORK/out'"
fi
if run matrix_exact_sampled 0 "$A" matrix "$G" --model exact --format json; then
	check matrix_exact_stderr bash -c "test \$(grep -c 'exact model needs a full trace' '$WORK/err') -eq 1"
	check matrix_exact_attr grep -q '"warning": "the exact model needs a full trace' "$WORK/out"
fi
if run matrix_signature_text 0 "$A" matrix "$G" --model signature; then
	check matrix_signature_attr grep -q 'warning.*signature model needs a full trace' "$WORK/out"
fi
if run matrix_cd_nowarn 0 "$A" matrix "$G" --format json; then
	check matrix_cd_no_warning bash -c "! grep -q 'warning' '$WORK/out' '$WORK/err'"
fi

# ---- matrix -------------------------------------------------------------------
# directed: [T1][T0] = 1000 (false, sample) + 4000 (true, hit: 1000*64/(2*8)),
# [T2][T0] = 1000 (true)
if run matrix_csv 0 "$A" matrix "$G" --format csv; then
	check matrix_csv_sym bash -c "grep -q '^T0(1000),0,5000,1000\$' '$WORK/out' && grep -q '^T1(1001),5000,0,0\$' '$WORK/out'"
fi
if run matrix_directed 0 "$A" matrix "$G" --format csv --directed; then
	check matrix_directed_rows bash -c "grep -q '^T0(1000),0,0,0\$' '$WORK/out' && grep -q '^T1(1001),5000,0,0\$' '$WORK/out'"
fi
if run matrix_true 0 "$A" matrix "$G" --format csv --kind true --directed; then
	check matrix_true_cells grep -q '^T1(1001),4000,0,0$' "$WORK/out"
fi
if run matrix_false 0 "$A" matrix "$G" --format csv --kind=false --directed; then
	check matrix_false_cells grep -q '^T1(1001),1000,0,0$' "$WORK/out"
fi
if run matrix_socket 0 "$A" matrix "$G" --format csv --index socket --directed; then
	check matrix_socket_cells bash -c "grep -q '^S0,5000,0\$' '$WORK/out' && grep -q '^S1,1000,0\$' '$WORK/out'"
fi
run matrix_core 0 "$A" matrix "$G" --index core --format csv &&
	check matrix_core_labels grep -q '^,S0C0,S0C1,S1C0,S1C1$' "$WORK/out"
run matrix_text 0 "$A" matrix "$G"
run matrix_json 0 "$A" matrix "$G" --format json -o "$WORK/m.json" &&
	check matrix_json_attrs grep -q '"expiry": "comdetective"' "$WORK/m.json"
run matrix_svg 0 "$A" matrix "$G" --format svg -o "$WORK/m.svg" &&
	check matrix_svg_file grep -q '<svg' "$WORK/m.svg"
run matrix_options 0 "$A" matrix "$G" --format csv --expiry ns:1000 --board-size 1 --hash murmur \
	--line-size 128 --watchpoints 2 --period-multiplier 1
run matrix_cd_csv 0 "$A" matrix "$G" --comdetective-csv "$WORK/cd" &&
	check matrix_cd_files test -s "$WORK/cd/app-1000-as_matrix.csv" -a -s "$WORK/cd/app-1000-ts_matrix.csv" \
		-a -s "$WORK/cd/app-1000-fs_core_matrix.csv" -a -s "$WORK/cd/app-1000-comdetective.log"
# ComDetective's files on a hand-built trace (ana_mktrace cpus): thread
# events T0->T1 true 1000 (cpu 0->1, one physical core), T0->T2 false 500
# (both on cpu 0: not in the core files), T2->T0 true 1000 and T2->T1
# false 1000 (cpu 3->2); files M + M^T, last row first; volumes directed sums
"$MK" "$WORK/cpus.zst" cpus || fail mktrace_cpus
# one socket is "1 socket", as the report says it
run info_one_socket 0 "$A" info "$WORK/cpus.zst" &&
	check info_one_socket_singular grep -qx '  cpu map: 4 cpus, 2 cores, 1 socket' "$WORK/out"
cd_file() { tr '\n' '/' <"$WORK/cdx/app-1000-$1"; }
if run matrix_cd_exact 0 "$A" matrix "$WORK/cpus.zst" --comdetective-csv "$WORK/cdx"; then
	check cd_as_thread test "$(cd_file as_matrix.csv)" = "1500.00,1000.00,0.00/1000.00,0.00,1000.00/0.00,1000.00,1500.00/"
	check cd_ts_thread test "$(cd_file ts_matrix.csv)" = "1000.00,0.00,0.00/1000.00,0.00,0.00/0.00,1000.00,1000.00/"
	check cd_fs_thread test "$(cd_file fs_matrix.csv)" = "500.00,1000.00,0.00/0.00,0.00,1000.00/0.00,0.00,500.00/"
	check cd_as_cpu test "$(cd_file as_core_matrix.csv)" = \
		"0.00,0.00,2000.00,0.00/0.00,0.00,0.00,2000.00/1000.00,0.00,0.00,0.00/0.00,1000.00,0.00,0.00/"
	check cd_ts_cpu test "$(cd_file ts_core_matrix.csv)" = \
		"0.00,0.00,1000.00,0.00/0.00,0.00,0.00,1000.00/1000.00,0.00,0.00,0.00/0.00,1000.00,0.00,0.00/"
	check cd_fs_cpu test "$(cd_file fs_core_matrix.csv)" = \
		"0.00,0.00,1000.00,0.00/0.00,0.00,0.00,1000.00/0.00,0.00,0.00,0.00/0.00,0.00,0.00,0.00/"
	check cd_stats test "$(cd_file comdetective.log)" = "COMDETECTIVE STATS: fs_volume:1500.00, \
fs_core_volume:1000.00, ts_volume:2000.00, ts_core_volume:2000.00, as_volume:3500.00, \
as_core_volume:3000.00, cache_line_transfer:3000.00, cache_line_transfer_millions:0.00, \
cache_line_transfer_gbytes:0.00/"
	check cd_same_cpu_warning grep -q "1 events within one cpu" "$WORK/err"
fi
# heatmap colour scales: the top legend label (the first number of the legend)
legend_top() { grep -o '<text[^>]*>[^<]*</text>' "$1" | sed 's/<[^>]*>//g' | grep -E '^(≥ )?[0-9,]+$' | head -1; }
# M + M^T: all 5000 (T0-T1), true 4000, false 1000
for k in true false; do
	run "svg_scale_$k" 0 "$A" matrix "$G" --kind $k --format svg -o "$WORK/$k.svg" &&
	run "svg_shared_$k" 0 "$A" matrix "$G" --kind $k --format svg --color-max shared -o "$WORK/$k.shared.svg"
done
check svg_own_scales test "$(legend_top "$WORK/true.svg") $(legend_top "$WORK/false.svg")" = "4,000 1,000"
check svg_shared_scale test "$(legend_top "$WORK/true.shared.svg") $(legend_top "$WORK/false.shared.svg")" = "5,000 5,000"
run svg_color_max 0 "$A" matrix "$G" --format svg --color-max=2000 --color-min min -o "$WORK/cm.svg" &&
	check svg_color_max_label test "$(legend_top "$WORK/cm.svg")" = "≥ 2,000"
# --color-scale log on the cpus trace (thread pairs M + M^T: all 1000, 1500,
# 1000; true 1000, 1000; false 500, 1000): the legend's middle is the
# geometric mean; shared, every kind spans [500, 1500], so a cell of 1000 has
# one colour in the true and the false picture (ln 2 / ln 3 up the ramp)
legend() { grep -o '<text[^>]*>[^<]*</text>' "$1" | sed 's/<[^>]*>//g' | grep -E '^([≥≤] )?[0-9,]+$' | tr '\n' ' '; }
cell_fill() { grep -o "fill=\"#[0-9a-f]*\"><title>$2: [0-9.]*" "$1" | sed 's/^fill="\(#[0-9a-f]*\)".*/\1/'; }
run svg_linear_min 0 "$A" matrix "$WORK/cpus.zst" --format svg --color-min min -o "$WORK/lin.svg" &&
	check svg_linear_legend test "$(legend "$WORK/lin.svg")" = "1,500 1,250 1,000 "
run svg_log 0 "$A" matrix "$WORK/cpus.zst" --format svg --color-scale=log -o "$WORK/log.svg" &&
	check svg_log_legend test "$(legend "$WORK/log.svg")" = "1,500 1,225 1,000 " &&
	check svg_log_subtitle grep -q 'max 1,500; log colour scale' "$WORK/log.svg"
for k in true false; do
	run "svg_log_shared_$k" 0 "$A" matrix "$WORK/cpus.zst" --kind $k --format svg --color-scale log \
		--color-max shared -o "$WORK/log.$k.svg" &&
	check "svg_log_shared_legend_$k" test "$(legend "$WORK/log.$k.svg")" = "1,500 866 500 "
done
check svg_log_shared_colour test "$(cell_fill "$WORK/log.true.svg" 'T0(1000) ← T1(1001)')" = "#209f88" -a \
	"$(cell_fill "$WORK/log.false.svg" 'T1(1001) ← T2(1002)')" = "#209f88"
check svg_log_shared_bottom test "$(cell_fill "$WORK/log.false.svg" 'T0(1000) ← T2(1002)')" = "#440154"
run usage_color_scale 1 "$A" matrix "$G" --color-scale sqrt && pass usage_color_scale
# a region without communication (ana_mktrace quiet) has no row in the text
# tree: it is named after it; csv keeps its row
"$MK" "$WORK/quiet.zst" quiet || fail mktrace_quiet
if run regions_quiet 0 "$A" regions "$WORK/quiet.zst"; then
	check regions_quiet_busy_row grep -Eq '^  busy +1 +1 +1,000 ' "$WORK/out"
	check regions_quiet_no_row bash -c "! grep -q '^  quiet ' '$WORK/out'"
	check regions_quiet_named grep -qx '1 region without communication, not shown above (csv and json list them): quiet' "$WORK/out"
fi
run regions_quiet_csv 0 "$A" regions "$WORK/quiet.zst" --format csv &&
	check regions_quiet_csv_row grep -q '^quiet,quiet,,1,1,1,0,0,0,' "$WORK/out"
# regions --node pictures take the same scale
run regions_svg_log 0 "$A" regions "$WORK/cpus.zst" --node '(program)' --format svg --color-scale log \
	-o "$WORK/rl.svg" && check regions_svg_log_legend test "$(legend "$WORK/rl.svg")" = "1,500 1,225 1,000 "
run usage_color_max 1 "$A" matrix "$G" --format svg --color-max -3 -o "$WORK/x.svg" &&
	check usage_color_max_msg grep -q "is not a positive number or shared" "$WORK/err"
run usage_color_min 1 "$A" matrix "$G" --color-min low && pass usage_color_min
if "$A" matrix "$G" --format h5 -o "$WORK/m.h5" >/dev/null 2>"$WORK/err"; then
	check matrix_h5 test -s "$WORK/m.h5"
elif grep -qi 'hdf5' "$WORK/err"; then
	skip matrix_h5 "built without HDF5"
else
	fail matrix_h5 "$(head -c 200 "$WORK/err")"
fi

# ---- usage errors: exit 1 -----------------------------------------------------------
# no trace: trace.zst in the current directory (commrec's default), or exit 2
# naming it
if (cd "$WORK" && mkdir -p none && cd none && "$A" >"$WORK/out" 2>"$WORK/err"); then
	fail default_trace_missing "exit 0 without trace.zst"
else
	check default_trace_missing grep -q 'trace.zst' "$WORK/err"
fi
mkdir -p "$WORK/cwd" && cp "$G" "$WORK/cwd/trace.zst"
for c in report info dump matrix lines; do
	if (cd "$WORK/cwd" && "$A" $c >"$WORK/out.default" 2>/dev/null &&
	    "$A" $c trace.zst >"$WORK/out.given" 2>/dev/null); then
		check "default_trace_$c" cmp -s "$WORK/out.default" "$WORK/out.given"
	else
		fail "default_trace_$c" "commanalyze $c without a trace failed beside trace.zst"
	fi
done
(cd "$WORK/cwd" && "$A" >"$WORK/out" 2>&1) && check default_command_report grep -q '^== Totals ==' "$WORK/out"

# ---- the command line: GNU getopt_long conventions in every command --------------
# each pair of spellings gives the same matrix
"$A" matrix "$G" --format csv --kind true --directed -b 31 -w 0 >"$WORK/want.csv" 2>/dev/null
for spelling in "matrix --format=csv --kind=true --directed --board-size=31 --watchpoints=0 $G" \
	"matrix --kind true $G --form csv --dir -w0 -b 31" \
	"matrix --format csv --kind=true --directed -b31 --watch 0 -- $G" \
	"matrix -qw0 -b 31 --format csv --kind true --directed $G"; do
	n="cli_same_${spelling// /_}"; n=${n//[^A-Za-z0-9_=-]/}
	if "$A" $spelling >"$WORK/got.csv" 2>"$WORK/err"; then
		check "$n" cmp -s "$WORK/want.csv" "$WORK/got.csv"
	else
		fail "$n" "$(head -c 200 "$WORK/err")"
	fi
done
# -w 0: the true-sharing hit of T1 (4000 without -w) is not counted
check cli_w_applied grep -q '^T1(1001),0,0,0$' "$WORK/want.csv"
# -ofile and -o file; a trace named like an option after --
run cli_o_attached 0 "$A" matrix "$G" --format csv "-o$WORK/o1.csv" &&
	run cli_o_separate 0 "$A" matrix -o "$WORK/o2.csv" --format csv "$G" &&
	check cli_o_same cmp -s "$WORK/o1.csv" "$WORK/o2.csv"
cp "$G" "$WORK/-dash.zst"
(cd "$WORK" && "$A" matrix --format csv -- -dash.zst >"$WORK/out" 2>"$WORK/err") &&
	check cli_dashdash cmp -s "$WORK/out" "$WORK/o1.csv" || fail cli_dashdash "$(cat "$WORK/err")"
(cd "$WORK" && "$A" matrix --format csv -dash.zst >/dev/null 2>"$WORK/err")
check cli_dash_needs_dashdash grep -q "unknown option '-d'" "$WORK/err"
# prefixes: unique accepted, ambiguous listed, exact wins over longer names
run cli_ambiguous 1 "$A" matrix "$G" --f csv &&
	check cli_ambiguous_lists grep -q "'--f' is ambiguous (--format, --fp-rate)" "$WORK/err"
run cli_exact_beats_prefix 0 "$A" dump "$G" --type=sample --limit=1 &&
	check cli_exact_lines test "$(wc -l <"$WORK/out")" -eq 1
run cli_flag_value 1 "$A" matrix "$G" --directed=yes &&
	check cli_flag_value_msg grep -q -- '--directed takes no value' "$WORK/err"
run cli_missing_value 1 "$A" matrix "$G" -o &&
	check cli_missing_value_msg grep -q -- '-o needs a value' "$WORK/err"
run cli_unknown_short 1 "$A" report "$G" -x &&
	check cli_unknown_short_msg grep -q "report: unknown option '-x'" "$WORK/err"
# -q, -v in every command
run cli_report_v 0 "$A" report -v "$G" &&
	check cli_report_v_says grep -q 'records replayed into 1 point (model comdetective)' "$WORK/err"
run cli_info_q 0 "$A" info -q "$G" && check cli_info_q_out grep -qx 'complete: yes' "$WORK/out"
run cli_matrix_q 0 "$A" matrix -q "$G" --model exact && check cli_matrix_q_silent test ! -s "$WORK/err"
run cli_cluster_help 0 "$A" matrix -qh && check cli_cluster_help_usage grep -q '^usage: commanalyze matrix' "$WORK/out"
# a mistyped command: named, not taken for a trace
run cli_typo 1 "$A" matirx "$G" &&
	check cli_typo_msg grep -q "'matirx' is not a command and not a file: did you mean 'matrix'" "$WORK/err"
# a word that is no command and no file before a trace: not a report of two
# traces; a directory that is no spool: said so, not its missing meta.zst
run cli_not_command 1 "$A" compare "$G" "$G" &&
	check cli_not_command_msg grep -q "'compare' is neither a command nor a trace (commands: report, .*sweep" "$WORK/err"
run cli_not_command_alone 1 "$A" compare &&
	check cli_not_command_alone_msg grep -q "'compare' is neither a command nor a trace" "$WORK/err"
mkdir -p "$WORK/notspool"
for c in report info sweep; do
	run "cli_dir_$c" 2 "$A" $c "$WORK/notspool" &&
		check "cli_dir_${c}_msg" grep -q "notspool: a directory that is neither a trace nor a commrec spool" "$WORK/err"
done
# timeline --interval: at most 100000 windows of the run (SUMMARY
# duration_ns, 5 s): refused before the replay, saying how many and what
# interval would do; 5 s / 50 us = 100000 (+ 1) is one too many
"$MK" "$WORK/long.zst" long || fail mktrace_long
run timeline_interval_too_short 1 "$A" timeline "$WORK/long.zst" --interval 1us &&
	check timeline_interval_msg grep -q -- '--interval 1.0 us makes 5000001 windows of the 5.000 s trace, at most 100000: give --interval 51us or longer' "$WORK/err"
run timeline_interval_limit 1 "$A" timeline "$WORK/long.zst" --interval 50us --changes && pass timeline_interval_limit
run timeline_interval_fits 0 "$A" timeline "$WORK/long.zst" --interval 51us --format csv && pass timeline_interval_fits
run usage_bad_option 1 "$A" --bogus && pass usage_bad_option
(cd "$WORK/none" && run usage_info_notrace 2 "$A" info) && pass usage_info_notrace
run usage_info_option 1 "$A" info "$G" --x && pass usage_info_option
run usage_dump_type 1 "$A" dump "$G" --type nonsense && pass usage_dump_type
run usage_dump_limit 1 "$A" dump "$G" --limit ten && pass usage_dump_limit
run usage_dump_thread 1 "$A" dump "$G" --thread 9 && pass usage_dump_thread
run usage_dump_novalue 1 "$A" dump "$G" --limit && pass usage_dump_novalue
run usage_matrix_kind 1 "$A" matrix "$G" --kind some && pass usage_matrix_kind
run usage_matrix_index 1 "$A" matrix "$G" --index numa && pass usage_matrix_index
run usage_matrix_h5 1 "$A" matrix "$G" --format h5 && pass usage_matrix_h5
run usage_expiry 1 "$A" "$G" --expiry soon && pass usage_expiry
run usage_model 1 "$A" report "$G" --model oracle && pass usage_model
run usage_board 1 "$A" report "$G" --board-size 0 && pass usage_board
run usage_two_traces 1 "$A" report "$G" "$G" && pass usage_two_traces
run help 0 "$A" --help && check help_exit_status grep -q 'Exit status' "$WORK/out"
run version 0 "$A" --version && check version_text grep -q '^commanalyze [0-9]' "$WORK/out"
run version_short 0 "$A" -V && check version_short_text grep -q '^commanalyze [0-9]' "$WORK/out"
# every command's --help (or -h, or help CMD): its own usage on stdout, exit 0,
# nothing on stderr, whatever else is on the line
for c in report info dump matrix objects lines sweep; do
	for h in --help -h; do
		if run "help_${c}_$h" 0 "$A" "$c" "$G" "$h"; then
			check "help_${c}_${h}_usage" grep -q "^usage: commanalyze .*$c" "$WORK/out"
			check "help_${c}_${h}_quiet" test ! -s "$WORK/err"
		fi
	done
	run "help_cmd_$c" 0 "$A" help "$c" && check "help_cmd_${c}_usage" grep -q "^usage: commanalyze .*$c" "$WORK/out"
done
run help_before_trace 0 "$A" matrix --help --bogus && check help_matrix_options grep -q -- '--comdetective-csv' "$WORK/out"
run help_sweep_options 0 "$A" sweep --help && check help_sweep_reference_model grep -q -- '--reference-model' "$WORK/out"
run help_default_report 0 "$A" "$G" --help && check help_default_is_report grep -q '^usage: commanalyze \[report\]' "$WORK/out"
run help_unknown_cmd 1 "$A" help frobnicate && pass help_unknown_cmd

# ---- sweep: the model named is the one swept ----------------------------------
if run sweep_model_label 0 "$A" sweep "$G" --param model=exact --param sync=include,exclude \
	--plot "$WORK/sw.svg" --csv "$WORK/sw.csv"; then
	check sweep_model_label_text grep -q '^sweep: 2 points (model: 1 x sync: 2), model exact, ' "$WORK/out"
	check sweep_model_label_svg grep -q 'commanalyze sweep: [^<]* (model exact)<' "$WORK/sw.svg"
fi
run sweep_models_label 0 "$A" sweep "$G" --param model=window,exact &&
	check sweep_models_label_text grep -q '^sweep: 2 points (model: 2), model window,exact, ' "$WORK/out"
if command -v h5dump >/dev/null && "$A" sweep "$G" --param model=exact -q -o "$WORK/sw.h5" 2>/dev/null; then
	check sweep_model_label_h5 bash -c "h5dump -a /model '$WORK/sw.h5' | grep -q '\"exact\"'"
	# a swept option is no fixed one
	check sweep_fixed_not_swept bash -c "h5dump -A '$WORK/sw.h5' | grep -q 'ATTRIBUTE \"fixed:hash\"' &&
		! h5dump -A '$WORK/sw.h5' | grep -q 'ATTRIBUTE \"fixed:model\"'"
else
	skip sweep_model_label_h5 "needs h5dump and an HDF5 build"
fi

# ---- malformed traces: exit 2, one line naming the file -------------------------
size=$(stat -c %s "$G")
: >"$WORK/zero.zst"
{ printf 'XXXX'; tail -c +5 "$G"; } >"$WORK/magic.zst"
head -c $((size / 2)) "$G" >"$WORK/trunc.zst"
cp "$G" "$WORK/flip.zst"
printf '\377' | dd of="$WORK/flip.zst" bs=1 seek=$((size * 2 / 3)) conv=notrunc 2>/dev/null
cp "$G" "$WORK/new.zst"
# header body after the 8-byte frame header and 8-byte section header:
# u16 version, u16 min_version -> 99, 99
printf '\143\000\143\000' | dd of="$WORK/new.zst" bs=1 seek=16 conv=notrunc 2>/dev/null
for bad in zero magic trunc flip new missing; do
	f="$WORK/$bad.zst"
	for c in info dump report matrix; do
		rc=0
		"$A" "$c" "$f" >"$WORK/out" 2>"$WORK/err" || rc=$?
		n="malformed_${bad}_$c"
		if [ "$rc" -ne 2 ]; then
			fail "$n" "exit $rc, expected 2 ($(head -c 200 "$WORK/err"))"
		elif [ "$(wc -l <"$WORK/err")" -ne 1 ]; then
			fail "$n" "expected one line on stderr, got: $(tr '\n' '|' <"$WORK/err")"
		elif ! grep -qF "$f" "$WORK/err"; then
			fail "$n" "message does not name the file: $(cat "$WORK/err")"
		elif [ "$bad" != missing ] && ! grep -q 'offset [0-9]' "$WORK/err"; then
			fail "$n" "message has no offset: $(cat "$WORK/err")"
		else
			pass "$n"
		fi
	done
done
# a truncated trace: dump prints the records before the damage
"$A" dump --raw "$WORK/trunc.zst" >"$WORK/out" 2>/dev/null
check malformed_trunc_dump_prefix bash -c "test -s '$WORK/out' && diff <(sort '$WORK/out') <(sort '$WORK/out' | grep -Fxf '$WORK/dump.want') >/dev/null"

done_tests
