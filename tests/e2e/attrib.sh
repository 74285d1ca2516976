#!/usr/bin/env bash
# End-to-end: attribution of communication to data and code, on
# tests/attrib/attrib_prog.c built with -g at -O0 and -O2, recorded with
# the launcher and analyzed with `commanalyze objects` and `lines`:
#   attrib/O*/objects     every shared object is named: q (struct queue,
#                         fields lock@0 by T1, count@8 by T2), cells (struct
#                         cell[8], cells[2].x@32 by T1, cells[2].y@40 by T2),
#                         heap:alloc_a:p and heap:alloc_b:p (their call paths with
#                         the right lines, typed long int by their allocation
#                         site: fields p[1], p[2] / p[0], p[3]), stack:T0
#                         (two words 8 bytes apart), counter (true sharing)
#   attrib/O*/code        the accesses' source lines are the marked ones
#                         (all of them at -O0, most of the weight at -O2)
#   attrib/O*/lines       the cache line of q shows lock@0 and count@8
#   attrib/portable       the trace moved away from the binary analyzes the
#                         same (objects and lines, text and JSON), and
#                         --symbols-from-binaries agrees with the embedded
#                         symbols
#   attrib/stripped, attrib/nodwarf, attrib/missing   degraded output with a
#                         note, exit status 0, never a crash
# The window model (5 ms) is used: it pairs every close sample of two threads,
# so the objects show up in a short run; sampling is noisy, so a run that
# misses an object is recorded again with longer phases.  Markers "@NAME" in
# the program give the expected line numbers.
. "$(dirname "$0")/../lib.sh"

SRC="$CT_ROOT/tests/attrib/attrib_prog.c"
if [ ! -x "$COMMREC" ] || [ ! -f "$CT_BUILD/libcommrec.so" ]; then
	skip attrib "no recorder: $COMMREC and $CT_BUILD/libcommrec.so needed"
	done_tests
fi
if [ ! -x "$COMMANALYZE" ]; then
	skip attrib "no analyzer: $COMMANALYZE needed"
	done_tests
fi
for tool in cc python3 strip; do
	if ! command -v "$tool" >/dev/null; then
		skip attrib "$tool not found"
		done_tests
	fi
done
if ! cc -g -O0 -pthread "$SRC" -o "$WORK/p0" 2>"$WORK/cc.err" ||
   ! cc -g -O2 -pthread "$SRC" -o "$WORK/p2" 2>>"$WORK/cc.err"; then
	fail attrib/build "cannot compile $SRC: $(head -c 300 "$WORK/cc.err")"
	done_tests
fi

MODEL=(--model window --window 5ms)

# record ID BIN PHASE_SECONDS: $WORK/ID.zst
record() {
	rm -rf "$WORK/$1.zst" "$WORK/$1.zst.spool"
	"$COMMREC" -q -c 200 -o "$WORK/$1.zst" -- "$WORK/$2" "$3" >"$WORK/$1.out" 2>"$WORK/$1.rec.err"
}

# symopt ID: "" when the trace carries symbols, else --symbols-from-binaries
symopt() {
	if "$COMMANALYZE" objects "$WORK/$1.zst" --format json "${MODEL[@]}" 2>/dev/null |
		grep -q '"symbols":"embedded"'; then
		echo ""
	else
		echo "--symbols-from-binaries"
	fi
}

CHECKER="$WORK/check.py"
cat >"$CHECKER" <<'EOF'
# check.py SRC OBJECTS_JSON LINES_JSON STRICT: exit 0 ok, 3 an object is
# missing (record again), 1 wrong (message on stdout).
import json, re, sys
src, ofile, lfile, strict = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
marks = {}
for n, line in enumerate(open(src), 1):
    for m in re.findall(r"@([A-Z0-9_]+)", line):
        marks.setdefault(m, n)
objs = {o["name"]: o for o in json.load(open(ofile))["objects"]}
lines = json.load(open(lfile))["lines"]
want = {
    "q": ["Q_LOCK", "Q_COUNT"], "cells": ["CELL_X", "CELL_Y"],
    "heap:alloc_a:p": ["HEAP_A1", "HEAP_A2"], "heap:alloc_b:p": ["HEAP_B1", "HEAP_B2"],
    "stack:T0": ["STACK1", "STACK2"], "counter": ["COUNTER"],
}
missing = [n for n in want if n not in objs]
if missing:
    print("missing objects: %s (have %s)" % (", ".join(missing), ", ".join(sorted(objs))))
    sys.exit(3)
errs = []
def field(o, path):
    for f in o["fields"]:
        if f["path"] == path:
            return f
    return None
def expect_field(name, path, off, size, writer):
    f = field(objs[name], path)
    if f is None:
        errs.append("%s: no field %s (fields %s)" % (name, path, [x["path"] for x in objs[name]["fields"]]))
    elif f["offset"] != off or f["size"] != size or writer not in f["writers"]:
        errs.append("%s.%s: offset %d size %d writers %s, expected %d, %d, T%d" %
                    (name, path, f["offset"], f["size"], f["writers"], off, size, writer))
q, c = objs["q"], objs["cells"]
if q["kind"] != "static" or q["type"] != "struct queue" or q["size"] != 16:
    errs.append("q: kind %s type %s size %s" % (q["kind"], q["type"], q["size"]))
expect_field("q", "q.lock", 0, 8, 1)
expect_field("q", "q.count", 8, 8, 2)
if c["type"] != "struct cell[8]" or c["size"] != 128:
    errs.append("cells: type %s size %s" % (c["type"], c["size"]))
expect_field("cells", "cells[2].x", 32, 8, 1)
expect_field("cells", "cells[2].y", 40, 8, 2)
# heap blocks typed by their allocation site: `long *p = aligned_alloc(...)`
for name, fn, alloc, call, f1, f2 in (("heap:alloc_a:p", "alloc_a", "ALLOC_A", "CALL_A", 1, 2),
                                      ("heap:alloc_b:p", "alloc_b", "ALLOC_B", "CALL_B", 0, 3)):
    o = objs[name]
    path = "%s (attrib_prog.c:%d) < main (attrib_prog.c:%d)" % (fn, marks[alloc], marks[call])
    if o["kind"] != "heap" or o["call_path"] != path or o["type"] != "long int":
        errs.append("%s: kind %s call path %r type %r, expected %r, long int" %
                    (name, o["kind"], o["call_path"], o["type"], path))
    expect_field(name, "p[%d]" % f1, 8 * f1, 8, 1)
    expect_field(name, "p[%d]" % f2, 8 * f2, 8, 2)
st = objs["stack:T0"]
fs = sorted(st["fields"], key=lambda f: f["offset"])
w1 = [f for f in fs if 1 in f["writers"]]
w2 = [f for f in fs if 2 in f["writers"]]
if st["kind"] != "stack" or not w1 or not w2 or w2[0]["offset"] - w1[0]["offset"] != 8:
    errs.append("stack:T0: fields %s" % [(f["path"], f["offset"], f["writers"]) for f in fs])
ct = objs["counter"]
if ct["true"] <= 0 or ct["false"] != 0:
    errs.append("counter: true %s false %s, expected true sharing only" % (ct["true"], ct["false"]))
if not (1 in ct["fields"][0]["writers"] or 2 in ct["fields"][0]["writers"]):
    errs.append("counter: writers %s" % ct["fields"][0]["writers"])
# code: the weight on the marked lines
for name, ms in want.items():
    o = objs[name]
    lines_ok = {marks[m] for m in ms}
    tot = sum(x["weight"] for x in o["code"])
    good = sum(x["weight"] for x in o["code"] if x["line"] in lines_ok and x["function"] == "worker")
    if tot <= 0 or good < (tot if strict else 0.5 * tot):
        errs.append("%s: code %s, expected lines %s" % (name,
                    [(x["where"], x["weight"]) for x in o["code"]], sorted(lines_ok)))
# the cache line of q
ql = [l for l in lines if any(x["object"] == "q" for x in l["offsets"])]
if not ql:
    errs.append("lines: no line with q")
else:
    offs = {x["offset"]: x for x in ql[0]["offsets"]}
    if (0 not in offs or offs[0]["field"] != "q.lock" or 1 not in offs[0]["writers"] or
            8 not in offs or offs[8]["field"] != "q.count" or 2 not in offs[8]["writers"] or
            ql[0]["false_events"] <= 0):
        errs.append("lines: q's line %s" % [(x["offset"], x["field"], x["writers"]) for x in ql[0]["offsets"]])
for e in errs:
    print(e)
sys.exit(1 if errs else 0)
EOF

# analyze ID: objects and lines in JSON (and text) with the given symbols
analyze() {
	local id=$1 opt=$2
	"$COMMANALYZE" objects "$WORK/$id.zst" "${MODEL[@]}" --top 0 --format json $opt \
		>"$WORK/$id.objects.json" 2>"$WORK/$id.ana.err" &&
	"$COMMANALYZE" lines "$WORK/$id.zst" "${MODEL[@]}" --top 0 --format json $opt \
		>"$WORK/$id.lines.json" 2>>"$WORK/$id.ana.err"
}

SYMS_EMBEDDED=
for level in 0 2; do
	id=O$level
	ok=
	msg=
	for phase in 0.4 0.8 1.6; do
		if ! record "$id" "p$level" "$phase"; then
			msg="commrec failed: $(head -c 300 "$WORK/$id.rec.err" | tr '\n' '|')"
			break
		fi
		opt=$(symopt "$id")
		[ -z "$opt" ] && SYMS_EMBEDDED=1
		if ! analyze "$id" "$opt"; then
			msg="commanalyze failed: $(head -c 300 "$WORK/$id.ana.err" | tr '\n' '|')"
			break
		fi
		rc=0
		msg=$(python3 "$CHECKER" "$SRC" "$WORK/$id.objects.json" "$WORK/$id.lines.json" \
			$([ "$level" = 0 ] && echo 1 || echo 0)) || rc=$?
		if [ "$rc" -eq 0 ]; then
			ok=1
			break
		fi
		[ "$rc" -eq 3 ] || break
	done
	if [ -n "$ok" ]; then
		pass "attrib/$id/objects+code+lines${opt:+ ($opt)}"
	else
		fail "attrib/$id" "$(echo "$msg" | tr '\n' '|' | head -c 1500)"
	fi
done

# ---- portable traces -------------------------------------------------------------
outputs() {   # outputs TRACE PREFIX [opts]: text and JSON of both views
	local t=$1 p=$2
	shift 2
	"$COMMANALYZE" objects "$t" "${MODEL[@]}" --top 0 "$@" >"$p.objects.txt" 2>/dev/null &&
	"$COMMANALYZE" objects "$t" "${MODEL[@]}" --top 0 --format json "$@" >"$p.objects.json" 2>/dev/null &&
	"$COMMANALYZE" lines "$t" "${MODEL[@]}" --top 0 "$@" >"$p.lines.txt" 2>/dev/null &&
	"$COMMANALYZE" lines "$t" "${MODEL[@]}" --top 0 --format json "$@" >"$p.lines.json" 2>/dev/null
}
if [ -z "$SYMS_EMBEDDED" ]; then
	skip attrib/portable "the launcher does not embed symbols (no SYMBOLS section in the trace)"
elif ! outputs "$WORK/O0.zst" "$WORK/here"; then
	fail attrib/portable "commanalyze failed on $WORK/O0.zst"
else
	mkdir -p "$WORK/elsewhere"
	cp "$WORK/O0.zst" "$WORK/elsewhere/moved.zst"
	mv "$WORK/p0" "$WORK/p0.away"
	if ! outputs "$WORK/elsewhere/moved.zst" "$WORK/there"; then
		fail attrib/portable "commanalyze failed on the moved trace"
	else
		d=
		for f in objects.txt objects.json lines.txt lines.json; do
			cmp -s "$WORK/here.$f" "$WORK/there.$f" || d="$d $f"
		done
		if [ -z "$d" ]; then pass attrib/portable/moved; else
			fail attrib/portable/moved "outputs differ:$d"; fi
	fi
	# the binary gone and asked for: a note, names from nothing, no crash
	rc=0
	"$COMMANALYZE" objects "$WORK/elsewhere/moved.zst" "${MODEL[@]}" --symbols-from-binaries \
		>"$WORK/missing.txt" 2>&1 || rc=$?
	if [ "$rc" -eq 0 ] && grep -q "note: .*p0: cannot open" "$WORK/missing.txt"; then
		pass attrib/missing
	else
		fail attrib/missing "exit $rc: $(head -c 400 "$WORK/missing.txt" | tr '\n' '|')"
	fi
	mv "$WORK/p0.away" "$WORK/p0"
	# the binaries and the embedded tables say the same
	if outputs "$WORK/O0.zst" "$WORK/bin" --symbols-from-binaries &&
	   python3 - "$WORK/here.objects.json" "$WORK/bin.objects.json" \
	             "$WORK/here.lines.json" "$WORK/bin.lines.json" <<'EOF'
import json, sys
def load(p):
    d = json.load(open(p)); d.pop("symbols", None); d.pop("notes", None); return d
sys.exit(0 if load(sys.argv[1]) == load(sys.argv[2]) and load(sys.argv[3]) == load(sys.argv[4]) else 1)
EOF
	then pass attrib/portable/binaries-agree; else
		fail attrib/portable/binaries-agree "--symbols-from-binaries differs from the embedded symbols"; fi
fi

# ---- degraded: stripped, no DWARF ----------------------------------------------------
cp "$WORK/p0" "$WORK/p0s" && strip "$WORK/p0s"
cc -O0 -pthread "$SRC" -o "$WORK/p0n"
for v in s:stripped n:nodwarf; do
	bin=p0${v%%:*}
	name=${v#*:}
	if ! record "$bin" "$bin" 0.2; then
		fail "attrib/$name" "commrec failed: $(head -c 300 "$WORK/$bin.rec.err" | tr '\n' '|')"
		continue
	fi
	bad=
	for opt in "" --symbols-from-binaries; do
		for view in objects lines; do
			for fmt in text csv json; do
				rc=0
				"$COMMANALYZE" "$view" "$WORK/$bin.zst" "${MODEL[@]}" --format "$fmt" $opt \
					>"$WORK/$bin.$view.$fmt" 2>"$WORK/$bin.err" || rc=$?
				[ "$rc" -eq 0 ] || bad="$bad $view/$fmt${opt:+/binaries}:exit$rc"
			done
		done
		"$COMMANALYZE" objects "$WORK/$bin.zst" "${MODEL[@]}" $opt >"$WORK/$bin.notes" 2>&1
		if [ -n "$opt" ] || [ -n "$SYMS_EMBEDDED" ]; then
			grep -q "note: .*$bin: .*\(stripped\|no DWARF\)" "$WORK/$bin.notes" ||
				bad="$bad no-note${opt:+/binaries}"
		fi
	done
	if [ -z "$bad" ]; then pass "attrib/$name"; else
		fail "attrib/$name" "$bad: $(head -c 300 "$WORK/$bin.notes" | tr '\n' '|')"; fi
done

done_tests
