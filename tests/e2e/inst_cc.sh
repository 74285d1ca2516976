#!/usr/bin/env bash
# record/commrec-cc on the commands users give it:
#   - -flto (one step and two steps): gcc instruments at the link then, so
#     the link gets -fsanitize=thread; the program references __tsan_* (from
#     libcommrec-inst, not libtsan), runs, and a full inst recording of it
#     has samples
. "$(dirname "$0")/../lib.sh"

CC_WRAP="$CT_ROOT/record/commrec-cc"
INSTLIB=${COMMREC_INST_LIBDIR:-$CT_BUILD}
export COMMREC_INST_LIBDIR="$INSTLIB"
require inst_cc "$COMMREC" "$COMMANALYZE" "$INSTLIB/libcommrec-inst.so" gcc nm
unset COMMTRACE_SPOOL COMMTRACE_PID

# instrumented PROG: it calls the instrumentation's entry points, and they
# come from libcommrec-inst (no libtsan)
instrumented() {
	nm -D "$1" 2>/dev/null | grep -q ' U __tsan_func_entry' &&
		! readelf -d "$1" | grep -q 'NEEDED.*libtsan'
}

# full_samples PROG: the SAMPLE records of a full inst recording of PROG
full_samples() {
	local t="$WORK/$(basename "$1").zst"
	"$COMMREC" -q -f -o "$t" --sampler inst --full -- "$1" >/dev/null 2>"$t.err" &&
		"$COMMANALYZE" dump --raw "$t" 2>/dev/null | grep -c ' sample '
}

# ---- -flto -------------------------------------------------------------------
cat >"$WORK/lto_main.c" <<'C'
int lto_counter;
int lto_bump(int v);
int main(void)
{
	for (int i = 0; i < 1000; i++)
		lto_counter = lto_bump(lto_counter);
	return lto_counter == 1000 ? 0 : 1;
}
C
printf 'int lto_bump(int v) { return v + 1; }\n' >"$WORK/lto_bump.c"
cd "$WORK" || exit 1
if CC=gcc "$CC_WRAP" -O3 -flto lto_main.c lto_bump.c -o lto1 2>cc.err; then
	check inst_cc_lto_one_step instrumented lto1
	check inst_cc_lto_runs ./lto1
	n=$(full_samples "$WORK/lto1")
	check inst_cc_lto_recorded test "${n:-0}" -gt 0
else
	fail inst_cc_lto_one_step "$(head -c 300 cc.err)"
fi
if CC=gcc "$CC_WRAP" -O2 -flto=auto -c lto_main.c lto_bump.c 2>cc.err &&
   CC=gcc "$CC_WRAP" -O2 -flto=auto lto_main.o lto_bump.o -o lto2 2>>cc.err; then
	check inst_cc_lto_two_steps instrumented lto2
else
	fail inst_cc_lto_two_steps "$(head -c 300 cc.err)"
fi

done_tests
