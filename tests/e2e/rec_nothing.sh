#!/usr/bin/env bash
# commrec where the recording has nothing in it, and says why:
#   - the program could not start (exit 127 from the dynamic loader: a
#     commrec-cc program whose libcommrec-inst.so is gone): that, not the
#     runtime's failure to load
#   - threads recorded but no sample: a warning naming the likely causes
#     (code not instrumented under --sampler inst; an exec'd program; a run
#     shorter than one period), and none where there are samples
. "$(dirname "$0")/../lib.sh"

CC_WRAP="$CT_ROOT/record/commrec-cc"
require rec_nothing "$COMMREC" "$COMMANALYZE" "$CT_BUILD/libcommrec-inst.so" gcc
unset COMMTRACE_SPOOL COMMTRACE_PID
cd "$WORK" || exit 1
has() { grep -q -- "$2" "$1"; }

# ---- the loader does not find libcommrec-inst.so ----------------------------------
mkdir lib && cp "$CT_BUILD/libcommrec-inst.so" lib/
printf 'int x;\nint main(void) { x++; return 0; }\n' >gone.c
if COMMREC_INST_LIBDIR="$WORK/lib" CC=gcc "$CC_WRAP" -O1 gone.c -o gone 2>cc.err; then
	rm -r lib
	rc=0
	"$COMMREC" -q -o gone.zst --sampler inst -- ./gone >gone.out 2>gone.err || rc=$?
	check rec_nothing_lib_missing_status test "$rc" -eq 125
	check rec_nothing_lib_missing_says has gone.err \
		'could not start: a shared library was not found (exit 127'
	check rec_nothing_lib_missing_not_runtime sh -c "! grep -q 'the runtime did not start' gone.err"
	check rec_nothing_lib_missing_loader has gone.err 'libcommrec-inst.so'
else
	fail rec_nothing_lib_missing_status "commrec-cc: $(head -c 300 cc.err)"
fi

# ---- threads recorded, no sample -------------------------------------------------
# samples TRACE: its SAMPLE records
samples() { "$COMMANALYZE" dump --raw "$1" 2>/dev/null | grep -c ' sample '; }
# compiled by plain gcc, linked by commrec-cc: it carries the runtime but
# calls no instrumentation, so a full recording has no sample at all
printf 'int x;\nint main(void) { for (int i = 0; i < 1000; i++) x += i; return x == 499500 ? 0 : 1; }\n' >plain.c
if gcc -O1 -c plain.c -o plain.o && CC=gcc "$CC_WRAP" plain.o -o plain 2>cc.err &&
   CC=gcc "$CC_WRAP" -O1 plain.c -o inst 2>>cc.err; then
	rc=0
	"$COMMREC" -o plain.zst --sampler inst --full -- ./plain >/dev/null 2>plain.err || rc=$?
	check rec_nothing_uninstrumented_status test "$rc" -eq 0
	check rec_nothing_uninstrumented_warns has plain.err \
		'warning: no samples: the program.s code is likely not instrumented'
	"$COMMREC" -o inst.zst --sampler inst --full -- ./inst >/dev/null 2>inst.err
	n=$(samples inst.zst)
	check rec_nothing_samples_no_warning sh -c "[ '${n:-0}' -gt 0 ] && ! grep -q 'no samples' inst.err"
else
	fail rec_nothing_uninstrumented_status "commrec-cc: $(head -c 300 cc.err)"
fi
# soft, an exec'd program: sh's own CPU time before its exec is far below
# the 1 s period, so the trace has no sample but where the first countdown
# drawn is that short (then this case has nothing to check)
if "$COMMREC" --list-samplers 2>/dev/null | grep -q '^soft  *yes'; then
	"$COMMREC" -o exec.zst -c 1000000 -- sh -c 'exec ./inst' >/dev/null 2>exec.err
	n=$(samples exec.zst)
	if [ "${n:-0}" -eq 0 ]; then
		check rec_nothing_exec_warns has exec.err "warning: no samples: .*exec'd another program"
	else
		skip rec_nothing_exec_warns "sh took $n samples before its exec"
	fi
else
	skip rec_nothing_exec_warns "the soft sampler does not work here"
fi

done_tests
