#!/usr/bin/env bash
# The hardware samplers (pebs, ibs) from the command line.
#
#   SAMPLER/refused/...  where `commrec --list-samplers` says SAMPLER does not
#                        work: `commrec --sampler SAMPLER -- /bin/true` exits
#                        125, names --sampler soft and --list-samplers, gives
#                        the probe's reason, runs nothing and writes no trace
#   auto/...             --sampler auto records with the first of pebs, ibs,
#                        soft that works here (soft on a machine without a
#                        PMU), and `commanalyze info` says which
#   SAMPLER/hw/...       needs the real PMU, skipped elsewhere with the
#                        probe's reason: write_volume recorded with SAMPLER;
#                        samples on the benchmark's objects, attributed to
#                        the right threads (ubtrace.py), and every sample
#                        whose address lies in a printed object is exact
#                        (the PMU's address, flag "exact") with the 8-byte
#                        length and store kind of the benchmark's stores
. "$(dirname "$0")/../lib.sh"
. "$UBENCH_SRC/ubrec.sh"

if [ ! -x "$COMMREC" ]; then
	skip pmu_samplers "$COMMREC not built"
	done_tests
fi
cd "$WORK" || exit 1

"$COMMREC" --list-samplers >list.out 2>list.err || true
works() { awk -v s="$1" '$1 == s { print $2; exit }' list.out; }
why() { awk -v s="$1" '$1 == s { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' list.out; }
rows_ok() { [ -n "$(works pebs)" ] && [ -n "$(works ibs)" ] && [ -n "$(works soft)" ]; }
check list_has_rows rows_ok

# ---- refusal where the PMU is missing ---------------------------------------------
for s in pebs ibs; do
	if [ "$(works "$s")" = yes ]; then
		skip "$s/refused" "$s works on this machine (commrec --list-samplers)"
		continue
	fi
	rc=0
	"$COMMREC" -f -o "$s.zst" --sampler "$s" -- /bin/sh -c 'echo ran >ran.txt' \
		>"$s.out" 2>"$s.err" </dev/null || rc=$?
	check "$s/refused/status-125" [ "$rc" -eq 125 ]
	check "$s/refused/names-sampler" grep -q "sampler $s does not work here" "$s.err"
	check "$s/refused/names-soft" grep -q -- "--sampler soft" "$s.err"
	check "$s/refused/names-list-samplers" grep -q -- "--list-samplers" "$s.err"
	reason=$(why "$s" | cut -c1-40)
	check "$s/refused/gives-reason" grep -qF -- "$reason" "$s.err"
	check "$s/refused/program-not-run" [ ! -e ran.txt ]
	check "$s/refused/no-trace" [ ! -e "$s.zst" ]
	# the same with /bin/true, as a user would try it
	rc=0
	"$COMMREC" --sampler "$s" -- /bin/true >"$s.true.out" 2>"$s.true.err" </dev/null || rc=$?
	check "$s/refused/true-status-125" [ "$rc" -eq 125 ]
	check "$s/refused/true-names-soft" grep -q -- "--sampler soft" "$s.true.err"
done

# ---- auto ------------------------------------------------------------------------------
want=
for s in pebs ibs soft; do
	if [ "$(works "$s")" = yes ]; then want=$s; break; fi
done
check auto/list-agrees grep -Eq "^auto +yes +$want\$" list.out
if ! ub_have_recorder; then
	skip auto/record "no runtime at $CT_BUILD/libcommrec.so"
elif ! ub_build write_volume; then
	fail auto/build "cannot build build/ubench/write_volume"
else
	ub_record auto --sampler auto -- write_volume -t 2 -n 20000000 -S 1
	ub_status_ok auto/status auto 0
	if ! ub_have_analyzer; then
		skip auto/info "no analyzer at $COMMANALYZE"
	else
		ub_info auto
		check auto/info-status [ "$UB_RC" -eq 0 ]
		check "auto/info-sampler-$want" grep -Eq "^ *sampler=$want\$" auto.info
		check auto/info-requested-auto grep -Eq "^ *sampler_requested=auto\$" auto.info
		ub_dump_to auto.samples auto --type sample
		check auto/has-samples grep -q ' sample ' auto.samples
	fi
fi

# ---- recording with the PMU (real hardware only) ---------------------------------------
# exact_in_objects BENCH_OUT DUMP: every sample whose address lies in one of
# the objects the benchmark printed is exact, 8 bytes, a store; and there is
# at least one.
exact_in_objects() {
	python3 - "$1" "$2" <<'EOF'
import re, sys
objs = []
for line in open(sys.argv[1]):
    m = re.match(r'object (\S+) 0x([0-9a-f]+)-0x([0-9a-f]+)', line)
    if m:
        objs.append((int(m.group(2), 16), int(m.group(3), 16)))
n = bad = 0
for line in open(sys.argv[2]):
    m = re.search(r' sample ip=\S+ addr=0x([0-9a-f]+) len=(\d+) kind=(\S+) .*flags=(\S*)', line)
    if not m:
        continue
    a = int(m.group(1), 16)
    if not any(lo <= a < hi for lo, hi in objs):
        continue
    n += 1
    flags = m.group(4).split(',')
    if 'exact' not in flags or m.group(2) != '8' or m.group(3) != 'store':
        bad += 1
        if bad <= 5:
            print('# not exact/8/store: ' + line.strip())
print('# %d samples in the objects, %d wrong' % (n, bad))
sys.exit(0 if n > 0 and bad == 0 else 1)
EOF
}

for s in pebs ibs; do
	if [ "$(works "$s")" != yes ]; then
		skip "$s/hw" "commrec --list-samplers: $s: $(why "$s")"
		continue
	fi
	if ! ub_have_recorder || ! ub_have_analyzer; then
		skip "$s/hw" "recorder or analyzer not built"
		continue
	fi
	if ! ub_build write_volume; then
		fail "$s/hw/build" "cannot build build/ubench/write_volume"
		continue
	fi
	# small periods: write_volume does one store per iteration, 0.3 s of
	# CPU per thread; every 20011th store (pebs) / 20000th op (ibs)
	ub_record "$s-hw" --sampler "$s" --period 20011 -- write_volume -t 2 -n 60000000 -S 1
	ub_status_ok "$s/hw/status" "$s-hw" 0
	ub_complete "$s/hw/complete" "$s-hw" yes
	check "$s/hw/info-sampler" grep -Eq "^ *sampler=$s\$" "$s-hw.info"
	ub_dump_to "$s-hw.samples" "$s-hw" --type sample
	python3 "$UBTRACE" --info "$s-hw.info" samples "$s/hw" "$s-hw.out" "$s-hw.samples" || ct_failed=1
	check "$s/hw/exact-in-objects" exact_in_objects "$s-hw.out" "$s-hw.samples"
done
done_tests
