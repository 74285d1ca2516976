#!/usr/bin/env bash
# The inst sampler end to end: programs in tests/inst/ built with
# record/commrec-cc (gcc, and clang when installed), run plain (no commrec:
# the runtime stays passive) and under `commrec --sampler inst` (sampled,
# -c N) and `--sampler inst --full=all`:
#   - the program's output is unchanged; atomics keep their semantics
#   - full: the SAMPLE records on the program's own globals are exactly its
#     accesses (per thread and kind); memcpy/memset are seen as line-sized
#     accesses; FUNC_ENTER/EXIT present with hooks, absent with --no-func
#   - sampled: samples per thread and kind = accesses / N within 5 standard
#     deviations of the countdowns' draws (near_draws), period N, flags
#     exact; memcpy lines are sampled too
#   - --static-runtime gives the same full trace counts
#   - inst-PID.txt (the runtime's counts) agrees with the full trace
#   - CC=commrec-cc in the environment (make CC=commrec-cc) compiles with cc
# Prints the bytes per access of full traces (INFO lines).
. "$(dirname "$0")/../lib.sh"

CC_WRAP="$CT_ROOT/record/commrec-cc"
INSTLIB=${COMMREC_INST_LIBDIR:-$CT_BUILD}
export COMMREC_INST_LIBDIR="$INSTLIB"
COUNT="$CT_ROOT/tests/inst/count.py"
SRC="$CT_ROOT/tests/inst"
N=7

for f in "$COMMREC" "$COMMANALYZE" "$INSTLIB/libcommrec-inst.so"; do
	if [ ! -e "$f" ]; then
		skip inst "build $f first (make)"
		exit 0
	fi
done
command -v python3 >/dev/null || { skip inst "needs python3"; exit 0; }
command -v gcc >/dev/null || { skip inst "needs gcc"; exit 0; }

# The program links the runtime itself: commrec must not preload another
# copy.  An empty library as COMMTRACE_RUNTIME keeps this test independent
# of whether the launcher preloads for --sampler inst.
printf 'int ct_inst_test_empty;\n' >"$WORK/empty.c"
gcc -shared -fPIC -o "$WORK/empty.so" "$WORK/empty.c" || { fail inst_setup "empty.so"; done_tests; }
export COMMTRACE_RUNTIME="$WORK/empty.so"
unset COMMTRACE_SPOOL COMMTRACE_PID

# kv FILE KEY: value of KEY=... in FILE (0 if absent)
kv() { local v; v=$(grep -m1 "^$2=" "$1" | cut -d= -f2-); echo "${v:-0}"; }
# near A B: |A - B| <= 1
near() { local d=$(($1 - $2)); [ "$d" -ge -1 ] && [ "$d" -le 1 ]; }
# near_draws SAMPLES EXPECTED: sampled mode's countdowns are drawn uniformly
# from 1 to 2N - 1 (mean N, variance ((2N - 1)^2 - 1) / 12 < N^2 / 3), so the
# samples of a accesses number a / N with a variance below (a / N) / 3
# (renewal theory): within 5 standard deviations, plus one for the rounding
near_draws() {
	awk -v s="$1" -v e="$2" 'BEGIN { d = s - e; if (d < 0) d = -d; exit !(d <= 5 * sqrt(e / 3) + 1) }'
}

# record NAME "PROG [ARGS]" [commrec options...]: trace $WORK/NAME.zst, stdout
# $WORK/NAME.out, stderr $WORK/NAME.err, dump $WORK/NAME.dump, counts
# $WORK/NAME.cnt (not for NAME atom-*: millions of records)
record() {
	local name=$1 prog=$2; shift 2
	local rc=0
	# shellcheck disable=SC2086
	"$COMMREC" -q -f --keep-spool -o "$WORK/$name.zst" "$@" -- $prog \
		>"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name" "exit $rc: stdout: $(head -c 200 "$WORK/$name.out" | tr '\n' ' ') stderr: $(head -c 400 "$WORK/$name.err")"
		return 1
	fi
	"$COMMANALYZE" dump --raw "$WORK/$name.zst" >"$WORK/$name.dump" 2>"$WORK/$name.derr" ||
		{ fail "$name" "dump: $(head -c 300 "$WORK/$name.derr")"; return 1; }
	case $name in
	atom-*) grep -c ' sample ' "$WORK/$name.dump" | sed 's/^/samples=/' >"$WORK/$name.cnt" ;;
	*) python3 "$COUNT" "$WORK/$name.dump" "$WORK/$name.err" >"$WORK/$name.cnt" ;;
	esac
	return 0
}

bytes_per_access() {
	local name=$1 size n
	size=$(stat -c %s "$WORK/$name.zst")
	n=$(kv "$WORK/$name.cnt" samples)
	if [ "$n" -gt 0 ]; then
		echo "INFO $name: $n accesses, $size bytes, $(python3 -c "print('%.2f' % ($size / $n))") bytes/access (whole file)"
	fi
}

compilers=(gcc)
for c in clang clang-14; do
	if command -v $c >/dev/null; then
		compilers+=("$c")
		break
	fi
done

for cc in "${compilers[@]}"; do
	t=$cc
	# ---- build ------------------------------------------------------------------
	if ! CC=$cc "$CC_WRAP" -O2 -pthread "$SRC/atomics.c" -o "$WORK/atomics.$t" 2>"$WORK/cc.err"; then
		fail "inst_build_atomics_$t" "$(head -c 400 "$WORK/cc.err")"
		continue
	fi
	pass "inst_build_atomics_$t"
	ok=1
	CC=$cc "$CC_WRAP" -O0 -pthread "$SRC/exact.c" -o "$WORK/exact.$t" 2>"$WORK/cc.err" || ok=0
	CC=$cc "$CC_WRAP" --no-func -O0 -pthread "$SRC/exact.c" -o "$WORK/exact-nofunc.$t" \
		2>>"$WORK/cc.err" || ok=0
	# two steps: compile, then link
	CC=$cc "$CC_WRAP" -O0 -pthread -c "$SRC/exact.c" -o "$WORK/exact2.$t.o" 2>>"$WORK/cc.err" &&
		CC=$cc "$CC_WRAP" -pthread "$WORK/exact2.$t.o" -o "$WORK/exact2.$t" 2>>"$WORK/cc.err" || ok=0
	if [ $ok = 0 ]; then
		fail "inst_build_exact_$t" "$(head -c 400 "$WORK/cc.err")"
		continue
	fi
	pass "inst_build_exact_$t"
	# the runtime must select the inst sampler (rt_main.c): else nothing below can pass
	if [ -z "${probed:-}" ]; then
		probed=1
		if record "probe" "$WORK/exact.$t" --sampler inst --full=all &&
			[ "$(kv "$WORK/probe.cnt" samples)" -eq 0 ]; then
			fail inst_runtime_selects_inst "no samples: $INSTLIB/libcommrec-inst.so does not start the inst sampler (the rt_sampler_inst hook in record/runtime/rt_main.c is missing?)"
			done_tests
		fi
	fi
	check "inst_not_tsan_runtime_$t" sh -c "! nm -D '$WORK/exact.$t' 2>/dev/null | grep -q ' U __tsan_report' && ldd '$WORK/exact.$t' | grep -q libcommrec-inst && ! ldd '$WORK/exact.$t' | grep -q libtsan"

	# ---- plain runs: the runtime is passive -----------------------------------------
	rc=0
	"$WORK/atomics.$t" >"$WORK/atomics.plain" 2>/dev/null || rc=$?
	check "inst_plain_atomics_$t" test "$rc" -eq 0
	check "inst_atomic_counter_$t" grep -qx "counter 4000000" "$WORK/atomics.plain"
	check "inst_atomic_cas_$t" grep -qx "cas 800000" "$WORK/atomics.plain"
	if gcc -O2 -pthread "$SRC/atomics.c" -o "$WORK/atomics.native" -latomic 2>/dev/null; then
		"$WORK/atomics.native" >"$WORK/atomics.native.out" 2>/dev/null
		check "inst_atomics_same_as_native_$t" cmp -s "$WORK/atomics.plain" "$WORK/atomics.native.out"
	fi
	"$WORK/exact.$t" >"$WORK/exact.plain" 2>"$WORK/exact.plain.err"
	check "inst_plain_no_spool_$t" test ! -e "$WORK/exact.plain.spool"
	"$WORK/exact2.$t" >"$WORK/exact2.plain" 2>/dev/null
	check "inst_two_step_build_$t" cmp -s "$WORK/exact.plain" "$WORK/exact2.plain"

	# ---- atomics under commrec ---------------------------------------------------------
	if record "atom-s.$t" "$WORK/atomics.$t" --sampler inst -c 1000; then
		check "inst_atomics_sampled_output_$t" cmp -s "$WORK/atomics.plain" "$WORK/atom-s.$t.out"
	fi
	"$WORK/atomics.$t" 100000 >"$WORK/atomics.small" 2>/dev/null
	if record "atom-f.$t" "$WORK/atomics.$t 100000" --sampler inst --full=all; then
		check "inst_atomics_full_output_$t" cmp -s "$WORK/atomics.small" "$WORK/atom-f.$t.out"
		# every fetch_add and compare-exchange of the 4 threads is an atomic sample
		na=$(grep -c ' sample .*kind=atomic' "$WORK/atom-f.$t.dump")
		check "inst_atomics_full_rmw_seen_$t" test "$na" -ge 480000
		bytes_per_access "atom-f.$t"
	fi

	# ---- exact counts: full ------------------------------------------------------------
	if record "full.$t" "$WORK/exact.$t" --sampler inst --full=all; then
		F="$WORK/full.$t.cnt"
		check "inst_full_output_$t" cmp -s "$WORK/exact.plain" "$WORK/full.$t.out"
		ok=1
		for th in 1 2 3; do
			[ "$(kv "$F" T$th.st.store)" -eq $((1000 * th)) ] || ok=0
			[ "$(kv "$F" T$th.ld.load)" -eq $((700 * th)) ] || ok=0
			[ "$(kv "$F" T$th.st.load)" -eq 0 ] || ok=0
			[ "$(kv "$F" T$th.ld.store)" -eq 0 ] || ok=0
		done
		check "inst_full_exact_counts_$t" test $ok = 1
		[ $ok = 1 ] || grep -E '^T[123]\.(st|ld)\.' "$F" | tr '\n' ' '
		check "inst_full_memcpy_src_$t" test "$(kv "$F" T0.src.load.len64)" -eq 64
		# memcpy: 64 lines; memset of 1000 bytes: 15 whole lines + 40 bytes
		check "inst_full_memcpy_dst_$t" test "$(kv "$F" T0.dst.store.len64)" -eq 79 -a \
			"$(kv "$F" T0.dst.store.len40)" -eq 1
		# a struct assignment (gcc: ranges, then a memcpy call: recorded once)
		check "inst_full_struct_copy_$t" test "$(kv "$F" T0.bgb.load)" -eq 64 -a \
			"$(kv "$F" T0.bgb.load.len64)" -eq 64 -a "$(kv "$F" T0.bga.store)" -eq 64 -a \
			"$(kv "$F" T0.bga.store.len64)" -eq 64
		# a small memcpy the compiler could have done inline, unseen
		check "inst_full_small_copy_$t" test "$(kv "$F" T0.sms.load.len24)" -eq 1 -a \
			"$(kv "$F" T0.smd.store.len24)" -eq 1
		check "inst_full_byte_loops_$t" test "$(kv "$F" T0.src.store)" -eq 4096 -a \
			"$(kv "$F" T0.dst.load)" -eq 4096
		ok=1
		for th in 1 2 3; do
			[ "$(kv "$F" T$th.func_enter)" -eq $((10 * th + 1)) ] || ok=0
			[ "$(kv "$F" T$th.func_exit)" -eq $((10 * th + 1)) ] || ok=0
		done
		check "inst_full_funcs_$t" test $ok = 1
		check "inst_full_period1_exact_$t" sh -c "! grep ' sample ' '$WORK/full.$t.dump' | grep -qv 'period=1 flags=exact'"
		check "inst_full_no_watchpoints_$t" sh -c "! grep -q ' wp_arm ' '$WORK/full.$t.dump'"
		# the runtime's own counts
		st=$(ls "$WORK/full.$t.zst.spool"/inst-*.txt 2>/dev/null | head -1)
		if [ -n "$st" ]; then
			tot=$(($(kv "$st" inst.loads) + $(kv "$st" inst.stores)))
			check "inst_counts_file_$t" test "$tot" -eq "$(kv "$F" samples)"
		else
			fail "inst_counts_file_$t" "no inst-PID.txt in the spool"
		fi
		bytes_per_access "full.$t"
	fi
	# at -O2 gcc would copy small or bounded blocks inline, uninstrumented
	if CC=$cc "$CC_WRAP" -O2 -pthread "$SRC/exact.c" -o "$WORK/exact-o2.$t" 2>"$WORK/cc.err" &&
		record "o2.$t" "$WORK/exact-o2.$t" --sampler inst --full=all; then
		F="$WORK/o2.$t.cnt"
		check "inst_o2_copies_$t" test "$(kv "$F" T0.sms.load.len24)" -eq 1 -a \
			"$(kv "$F" T0.smd.store.len24)" -eq 1 -a "$(kv "$F" T0.bga.store)" -eq 64 -a \
			"$(kv "$F" T0.bgb.load)" -eq 64 -a "$(kv "$F" T0.src.load.len64)" -eq 64 -a \
			"$(kv "$F" T0.dst.store.len64)" -eq 79
	fi
	if record "nofunc.$t" "$WORK/exact-nofunc.$t" --sampler inst --full=all; then
		F="$WORK/nofunc.$t.cnt"
		check "inst_nofunc_no_records_$t" test "$(kv "$F" T1.func_enter)" -eq 0 -a \
			"$(kv "$F" T0.func_exit)" -eq 0
		check "inst_nofunc_exact_$t" test "$(kv "$F" T3.st.store)" -eq 3000 -a \
			"$(kv "$F" T3.ld.load)" -eq 2100
	fi

	# ---- sampled: one in N accesses ------------------------------------------------------
	if record "samp.$t" "$WORK/exact.$t" --sampler inst -c $N && [ -e "$WORK/full.$t.cnt" ]; then
		S="$WORK/samp.$t.cnt"
		F="$WORK/full.$t.cnt"
		check "inst_sampled_output_$t" cmp -s "$WORK/exact.plain" "$WORK/samp.$t.out"
		if [ "$(kv "$S" samples)" -eq 0 ]; then
			fail "inst_sampled_$t" "no samples: the runtime did not start the inst sampler (rt_main.c hook?)"
		else
			ok=1
			msg=
			for th in 0 1 2 3; do
				lf=$(kv "$F" T$th.load)
				sf=$(($(kv "$F" T$th.store) + $(kv "$F" T$th.atomic)))
				ls=$(kv "$S" T$th.load)
				ss=$(($(kv "$S" T$th.store) + $(kv "$S" T$th.atomic)))
				near_draws "$ls" $((lf / N)) || { ok=0; msg="$msg T$th loads $ls vs $lf/$N"; }
				near_draws "$ss" $((sf / N)) || { ok=0; msg="$msg T$th stores $ss vs $sf/$N"; }
			done
			check "inst_sampled_exact_period_$t" test $ok = 1
			[ $ok = 1 ] || echo "  $msg"
			check "inst_sampled_fields_$t" sh -c "! grep ' sample ' '$WORK/samp.$t.dump' | grep -qv 'period=$N flags=exact'"
			check "inst_sampled_memcpy_$t" test "$(kv "$S" T0.src.load.len64)" -ge 1 -a \
				"$(kv "$S" T0.dst.store.len64)" -ge 1
		fi
	fi

	# ---- the program's signal handler nested in the runtime ---------------------------------
	if CC=$cc "$CC_WRAP" -O1 "$SRC/signals.c" -o "$WORK/signals.$t" 2>"$WORK/cc.err"; then
		"$WORK/signals.$t" >"$WORK/signals.plain" 2>/dev/null
		for mode in "-c $N" "--full=all"; do
			m=${mode#--}; m=${m%% *}; m=${m#-}; m=${m%%=*}
			# shellcheck disable=SC2086
			if record "sig$m.$t" "$WORK/signals.$t" --sampler inst $mode; then
				check "inst_signals_${m}_output_$t" cmp -s "$WORK/signals.plain" "$WORK/sig$m.$t.out"
			fi
		done
		check "inst_signals_full_exact_$t" test "$(kv "$WORK/sigfull.$t.cnt" T0.arr.store)" -eq 500000
	else
		fail "inst_signals_build_$t" "$(head -c 400 "$WORK/cc.err")"
	fi

	# ---- cross-thread order of full-trace timestamps (release store -> acquire load) ---------
	if CC=$cc "$CC_WRAP" -O2 -pthread "$SRC/pingpong.c" -o "$WORK/pingpong.$t" 2>"$WORK/cc.err"; then
		rm -rf "$WORK/pp.zst" "$WORK/pp.zst.spool"
		if "$COMMREC" -q -f -o "$WORK/pp.zst" --sampler inst --full=all -- "$WORK/pingpong.$t" 2000 \
			>/dev/null 2>"$WORK/pp.err"; then
			res=$("$COMMANALYZE" dump --raw "$WORK/pp.zst" | python3 "$SRC/order.py" - "$WORK/pp.err")
			echo "INFO order ($t): $res"
			check "inst_full_order_$t" test "$(echo "$res" | sed -n 's/.*wrong_order=\([0-9]*\).*/\1/p')" = 0
		else
			fail "inst_full_order_$t" "$(head -c 300 "$WORK/pp.err")"
		fi
		rm -rf "$WORK/pp.zst" "$WORK/pp.zst.spool"
	fi

	# ---- the static runtime ----------------------------------------------------------------
	if [ -e "$INSTLIB/libcommrec-inst.a" ]; then
		if CC=$cc "$CC_WRAP" --static-runtime -O0 -pthread "$SRC/exact.c" -o "$WORK/exact-static.$t" \
			2>"$WORK/cc.err"; then
			check "inst_static_no_so_$t" sh -c "! ldd '$WORK/exact-static.$t' | grep -q libcommrec"
			"$WORK/exact-static.$t" >"$WORK/static.plain" 2>/dev/null
			check "inst_static_plain_$t" cmp -s "$WORK/exact.plain" "$WORK/static.plain"
			if record "static.$t" "$WORK/exact-static.$t" --sampler inst --full=all; then
				F="$WORK/static.$t.cnt"
				check "inst_static_full_$t" test "$(kv "$F" T3.st.store)" -eq 3000 -a \
					"$(kv "$F" T3.ld.load)" -eq 2100 -a "$(kv "$F" T0.src.load.len64)" -eq 64 -a \
					"$(kv "$F" T0.dst.store.len64)" -eq 79
			fi
		else
			fail "inst_static_build_$t" "$(head -c 400 "$WORK/cc.err")"
		fi
	fi
done

# make CC=commrec-cc: make exports CC=commrec-cc to the commands it runs, so
# the wrapper finds itself as $CC and must not run itself again (it did,
# without end).  The timeout and the process limit only stop a regression.
printf 'int main(void) { return 0; }\n' >"$WORK/self.c"
if (ulimit -u 4096; CC="$CC_WRAP" timeout 120 "$CC_WRAP" -O2 "$WORK/self.c" -o "$WORK/self") \
	>"$WORK/self.err" 2>&1 && "$WORK/self"; then
	pass inst_cc_is_self
else
	fail inst_cc_is_self "CC=commrec-cc commrec-cc ...: $(head -c 300 "$WORK/self.err")"
fi

done_tests
