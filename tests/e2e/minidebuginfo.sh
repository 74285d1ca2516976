#!/usr/bin/env bash
# End-to-end: the MiniDebugInfo of a stripped binary (.gnu_debugdata: an
# xz-compressed ELF file holding the .symtab of the functions .dynsym lacks,
# as Fedora builds its packages).  tests/functions/pipeline.c is built with
# commrec-cc, stripped the way Fedora's find-debuginfo does it, recorded
# exactly (--sampler inst --full) and analyzed with `functions`:
#   minidebuginfo/names     the static functions stage1, stage2, stage3 are
#                           named (flows stage1 -> stage2 and stage2 ->
#                           stage3), from the embedded symbols and from the
#                           binary (--symbols-from-binaries)
#   minidebuginfo/without   the same binary stripped without .gnu_debugdata:
#                           no stage name (the code is named by module and
#                           offset), so the names above came from it
. "$(dirname "$0")/../lib.sh"

CC_WRAP="$CT_ROOT/record/commrec-cc"
export COMMREC_INST_LIBDIR=${COMMREC_INST_LIBDIR:-$CT_BUILD}
for f in "$COMMREC" "$COMMANALYZE" "$COMMREC_INST_LIBDIR/libcommrec-inst.so"; do
	if [ ! -e "$f" ]; then
		skip minidebuginfo "build $f first (make)"
		done_tests
	fi
done
for tool in cc nm objcopy strip xz comm readelf; do
	if ! command -v "$tool" >/dev/null; then
		skip minidebuginfo "$tool not found"
		done_tests
	fi
done
unset COMMTRACE_SPOOL COMMTRACE_PID

if ! "$CC_WRAP" -O1 -pthread "$CT_ROOT/tests/functions/pipeline.c" -o "$WORK/full" \
		2>"$WORK/cc.err"; then
	fail minidebuginfo/build "$(head -c 300 "$WORK/cc.err")"
	done_tests
fi
# Fedora's recipe: the function symbols not in .dynsym, in a symbol-only
# copy of the binary, xz-compressed into the stripped binary's .gnu_debugdata
cp "$WORK/full" "$WORK/mini"
cp "$WORK/full" "$WORK/bare"
nm -D "$WORK/full" --format=posix --defined-only | awk '{ print $1 }' | sort >"$WORK/dynsyms"
nm "$WORK/full" --format=posix --defined-only | awk '$2 ~ /^[Tt]$/ { print $1 }' | sort >"$WORK/funcsyms"
comm -13 "$WORK/dynsyms" "$WORK/funcsyms" >"$WORK/keep"
if ! { objcopy --only-keep-debug "$WORK/full" "$WORK/debug" &&
       objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols="$WORK/keep" "$WORK/debug" "$WORK/minidebug" &&
       xz -f "$WORK/minidebug" &&
       strip --strip-all -R .comment "$WORK/mini" &&
       objcopy --add-section .gnu_debugdata="$WORK/minidebug.xz" "$WORK/mini" &&
       strip --strip-all -R .comment "$WORK/bare"; } 2>"$WORK/strip.err"; then
	fail minidebuginfo/strip "$(head -c 300 "$WORK/strip.err")"
	done_tests
fi
# no .symtab left, and the section is there
check minidebuginfo/stripped sh -c "! readelf -S '$WORK/mini' | grep -q '\.symtab' &&
	readelf -S '$WORK/mini' | grep -q '\.gnu_debugdata'"

# flows ID [opts]: the functions view's CSV of $WORK/ID.zst
flows() {
	local id=$1
	shift
	"$COMMANALYZE" functions "$WORK/$id.zst" --model exact --format csv --top 0 "$@" \
		-o "$WORK/$id.csv" 2>"$WORK/$id.ana.err"
}
for id in mini bare; do
	if ! "$COMMREC" -q -f -o "$WORK/$id.zst" --sampler inst --full -- "$WORK/$id" 4 \
			>"$WORK/$id.out" 2>"$WORK/$id.err"; then
		fail "minidebuginfo/$id" "commrec: $(head -c 300 "$WORK/$id.err")"
		done_tests
	fi
done
edges() { grep -c -E '^[^,]*,(stage1,stage2|stage2,stage3),' "$1"; }
if flows mini; then
	check minidebuginfo/names test "$(edges "$WORK/mini.csv")" = 2
else
	fail minidebuginfo/names "$(head -c 300 "$WORK/mini.ana.err")"
fi
if flows mini --symbols-from-binaries; then
	check minidebuginfo/names_from_binaries test "$(edges "$WORK/mini.csv")" = 2
else
	fail minidebuginfo/names_from_binaries "$(head -c 300 "$WORK/mini.ana.err")"
fi
if flows bare; then
	check minidebuginfo/without sh -c "! grep -q stage '$WORK/bare.csv'"
else
	fail minidebuginfo/without "$(head -c 300 "$WORK/bare.ana.err")"
fi
done_tests
