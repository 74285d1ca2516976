#!/usr/bin/env bash
# End-to-end: heap blocks typed by their allocation site (the SYMBOLS
# allocation-site table, formats/FORMAT.md), on programs recorded exactly
# (`commrec --sampler inst --full`: deterministic on any machine), each at
# -O0 and -O2 (gcc):
#   heap_types/c_O*      tests/heaptypes/heap_types.c: `struct cell *c =
#                        malloc(16 * sizeof *c)` is an array of struct cell
#                        (field c[3].y at 80, 8 bytes); a block stored to the
#                        global `struct grid *g_grid` is a struct grid
#                        (g_grid.h at 4, 4 bytes); a block from the wrapper
#                        xmalloc() is untyped (+8): the wrapper's caller is
#                        not followed
#   heap_types/cxx_O*    tests/heaptypes/heap_types.cpp: `new Cell()` is a
#                        struct Cell (.y at 8), through the constructor call
#                        (-O0) or the inlined constructor's `this` (-O2)
#   heap_types/cxx_ctor_elsewhere  the same with Cell's constructor in a unit
#                        of its own built without instrumentation
#                        (heap_types_ctor.cpp, -O0): nothing of that unit is
#                        recorded, so the join reads it only for its
#                        variables and functions, and the site is typed all
#                        the same
#   heap_types/inline_O2 tests/heaptypes/heap_inline.c: two arrays from an
#                        inlined helper (as LULESH's Allocate<T>), their
#                        pointers in stack slots addressed from rsp (one with
#                        no displacement) and located from the CFA by DWARF:
#                        lo[5] at 40 and hi[7] at 56, doubles, each named
#                        after its variable; and one stored into a member
#                        through the structure's pointer, in a register:
#                        xs[2] at 16, named after the member
#   heap_types/c_clang_O0  the C program built by clang -O0: c[3].y and the
#                        untyped wrapper's block
#   heap_types/c_clang_O0_dwarf4  the same with -gdwarf-4: g_grid.h too (the
#                        result goes through a temporary stack slot, loaded
#                        back before the store to the global)
#   heap_types/binaries  --symbols-from-binaries types the same blocks
. "$(dirname "$0")/../lib.sh"

CC_WRAP="$CT_ROOT/record/commrec-cc"
export COMMREC_INST_LIBDIR=${COMMREC_INST_LIBDIR:-$CT_BUILD}
for f in "$COMMREC" "$COMMANALYZE" "$COMMREC_INST_LIBDIR/libcommrec-inst.so"; do
	if [ ! -e "$f" ]; then
		skip heap_types "build $f first (make)"
		done_tests
	fi
done
for tool in cc g++ python3; do
	if ! command -v "$tool" >/dev/null; then
		skip heap_types "$tool not found"
		done_tests
	fi
done
unset COMMTRACE_SPOOL COMMTRACE_PID

# check.py OBJECTS_JSON  NAME:TYPE:PATH:OFFSET:SIZE...: for each expectation,
# a heap object of that type with that field (exit 1 and a message if not)
CHECKER="$WORK/check.py"
cat >"$CHECKER" <<'PY'
import json, sys
objs = [o for o in json.load(open(sys.argv[1]))["objects"] if o["kind"] == "heap"]
errs = []
for want in sys.argv[2:]:
    typ, path, off, size = want.split(":")
    hit = [o for o in objs if o["type"] == typ and
           any(f["path"] == path and f["offset"] == int(off) and f["size"] == int(size)
               for f in o["fields"])]
    if not hit:
        errs.append("no heap object of type %s with field %s@%s/%s" % (typ, path, off, size))
if errs:
    print("; ".join(errs), "; have:",
          [(o["type"], [(f["path"], f["offset"], f["size"]) for f in o["fields"]]) for o in objs])
sys.exit(1 if errs else 0)
PY

C_WANT=("struct cell:c[3].y:80:8" "struct grid:g_grid.h:4:4" "untyped:+8:8:8")
CXX_WANT=("struct Cell:.y:8:8")

# run ID COMPILER SOURCE LEVEL EXPECTATIONS...
run() {
	local id=$1 comp=$2 src=$3 level=$4
	shift 4
	if ! CC=$comp "$CC_WRAP" -g ${HT_CFLAGS:-} -O"$level" -pthread "$src" -o "$WORK/$id" \
			$([ "$comp" = g++ ] && echo -lstdc++) 2>"$WORK/$id.cc.err"; then
		fail "heap_types/$id" "cannot build: $(head -c 300 "$WORK/$id.cc.err")"
	elif ! "$COMMREC" -q -f -o "$WORK/$id.zst" --sampler inst --full -- "$WORK/$id" \
			>"$WORK/$id.out" 2>"$WORK/$id.err"; then
		fail "heap_types/$id" "commrec: $(head -c 300 "$WORK/$id.err")"
	elif ! "$COMMANALYZE" objects "$WORK/$id.zst" --model exact --top 0 --format json \
			-o "$WORK/$id.json" 2>"$WORK/$id.ana.err"; then
		fail "heap_types/$id" "commanalyze: $(head -c 300 "$WORK/$id.ana.err")"
	else
		local msg
		if msg=$(python3 "$CHECKER" "$WORK/$id.json" "$@"); then
			pass "heap_types/$id"
		else
			fail "heap_types/$id" "$msg"
		fi
	fi
}

for level in 0 2; do
	run "c_O$level" cc "$CT_ROOT/tests/heaptypes/heap_types.c" "$level" "${C_WANT[@]}"
	run "cxx_O$level" g++ "$CT_ROOT/tests/heaptypes/heap_types.cpp" "$level" "${CXX_WANT[@]}"
done
run inline_O2 cc "$CT_ROOT/tests/heaptypes/heap_inline.c" 2 "double:lo[5]:40:8" "double:hi[7]:56:8" \
	"double:xs[2]:16:8"
# the constructor in an uninstrumented unit of its own
H="$CT_ROOT/tests/heaptypes"
if g++ -g -O0 -c "$H/heap_types_ctor.cpp" -o "$WORK/ctor.o" 2>"$WORK/ctor.err" &&
   CC=g++ "$CC_WRAP" -g -O0 -DCTOR_ELSEWHERE -c "$H/heap_types.cpp" -o "$WORK/ht.o" 2>>"$WORK/ctor.err"; then
	printf '%s\n' "$WORK/ht.o" "$WORK/ctor.o" >"$WORK/objs"
	run cxx_ctor_elsewhere g++ "@$WORK/objs" 0 "${CXX_WANT[@]}"
else
	fail heap_types/cxx_ctor_elsewhere "cannot build: $(head -c 300 "$WORK/ctor.err")"
fi
# clang -O0: a frame base of DW_OP_reg6 (rbp).  Its global is left out: its
# DWARF 5 globals (DW_OP_addrx) are not read (formats/FORMAT.md)
if command -v clang >/dev/null; then
	run c_clang_O0 clang "$CT_ROOT/tests/heaptypes/heap_types.c" 0 "${C_WANT[0]}" "${C_WANT[2]}"
	# with DWARF 4 (DW_OP_addr) its global is typed: the result spilled to the
	# temporary slot is loaded back and stored to g_grid
	HT_CFLAGS=-gdwarf-4 run c_clang_O0_dwarf4 clang "$CT_ROOT/tests/heaptypes/heap_types.c" 0 \
		"${C_WANT[@]}"
else
	skip heap_types/c_clang_O0 "clang not found"
	skip heap_types/c_clang_O0_dwarf4 "clang not found"
fi

# the same types from the binaries (the analyzer infers them itself)
if [ -f "$WORK/c_O2.zst" ] &&
   "$COMMANALYZE" objects "$WORK/c_O2.zst" --model exact --top 0 --format json \
		--symbols-from-binaries -o "$WORK/bin.json" 2>"$WORK/bin.err"; then
	check heap_types/binaries python3 "$CHECKER" "$WORK/bin.json" "${C_WANT[@]}"
else
	fail heap_types/binaries "$(head -c 300 "$WORK/bin.err" 2>/dev/null)"
fi
done_tests
