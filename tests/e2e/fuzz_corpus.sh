#!/usr/bin/env bash
# The fuzz targets' committed corpora (tests/fuzz/corpus/NAME/), replayed
# through the same entry points built by the normal compiler
# (build/fuzz/NAME_replay, -DCT_FUZZ_MAIN, sanitized with ASAN=1): every
# input must run to its end (no crash, no abort from a failed check), and
# the reader's corpus also holds the malformed traces (tests/malformed).
. "$(dirname "$0")/../lib.sh"

ran=0
for src in "$CT_ROOT"/tests/fuzz/*_fuzz.c; do
	name=$(basename "$src" _fuzz.c)
	bin=$CT_BUILD/fuzz/${name}_replay
	dir=$CT_ROOT/tests/fuzz/corpus/$name
	if [ ! -x "$bin" ]; then
		fail "fuzz-corpus/$name" "no replay driver at $bin (make tests)"
		continue
	fi
	if [ ! -d "$dir" ] || [ -z "$(ls -A "$dir")" ]; then
		fail "fuzz-corpus/$name" "no corpus in $dir"
		continue
	fi
	rc=0
	"$bin" "$dir"/* >"$WORK/$name.out" 2>&1 || rc=$?
	n=$(ls "$dir" | wc -l)
	if [ "$rc" -eq 0 ]; then
		pass "fuzz-corpus/$name"
	else
		fail "fuzz-corpus/$name" "status $rc over $n inputs: $(tail -n 3 "$WORK/$name.out" | tr '\n' '|')"
	fi
	ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || fail fuzz-corpus "no fuzz target found under tests/fuzz"
done_tests
