#!/usr/bin/env bash
# commrec where the recording has nothing in it, and says why:
#   - the program could not start (exit 127 from the dynamic loader: a
#     commrec-cc program whose libcommrec-inst.so is gone): that, not the
#     runtime's failure to load
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

done_tests
