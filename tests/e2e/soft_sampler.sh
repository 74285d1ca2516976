#!/usr/bin/env bash
# End-to-end: the soft sampler's paths give every sample to the thread that
# took it, and the p2p pattern still shows.
#
#   soft/cpu_wide/*    COMMTRACE_SOFT_TIMER=0 COMMTRACE_SOFT_CPU_WIDE=1 -w 0:
#                      one CPU-wide cpu-clock event per CPU, decoded by the
#                      writer, the program's samples kept (the trace says
#                      sampler_rings=cpu-wide; SKIP where they do not open:
#                      not root, no CAP_PERFMON, kernel.perf_event_paranoid > 0)
#   soft/inherited/*   COMMTRACE_SOFT_TIMER=0 -w 0 (the perf path, whatever
#                      commrec's probe would choose): one inherited
#                      task-clock event per CPU (the default), decoded by the
#                      writer (sampler_delivery=cpu-rings,
#                      sampler_rings=inherited; SKIP where perf events are
#                      denied and the runtime fell back to the timer)
#   soft/periodic/rate the same path on tests/ubench/periodic (2 threads
#                      that wake at every 10 ms of the clock and work 300 us,
#                      300 times: a period of 1 ms divides the interval): the
#                      rate check below.  Samples on a fixed grid of the clock
#                      (CPU-wide events) take 0 or 1 sample a wake-up by its
#                      phase, 2x or 0.1x the expected count here
#   soft/timer/*       COMMTRACE_SOFT_TIMER=1 -w 0: POSIX CPU timers
#                      (sampler_fallback=posix-timer)
#   soft/cpu_wp/*      COMMTRACE_SOFT_TIMER=0 with watchpoints (commrec's
#                      default): where the per-CPU probe says breakpoints
#                      opened per CPU fire, the per-CPU rings and the
#                      writer's per-CPU watchpoints (watchpoint_arming=cpu):
#                      the same checks, and every hit follows the rules of
#                      pattern.py --wp-check (on its register's word of its
#                      thread's last arm, one per arm, not the publisher's),
#                      the WP_ARM and WP_HIT records are as many as the
#                      SUMMARY counts (less those of a thread that ended
#                      between the writer's look at it and its arm: at most
#                      one a thread); SKIP with commrec's reason where it
#                      chose the per-thread path (no per-CPU events, or
#                      they do not fire, or their registers are taken)
#
# Checks (p2p -t 4: threads in pairs 0-1, 2-3, each with a private line
# that only it touches; the benchmark prints each thread's tid, CPU time and
# objects, the trace's info maps tids to trace threads):
#   NAME/samples      every benchmark thread has samples, where its CPU time
#                     makes at least LAMBDA_MIN samples expected (Poisson:
#                     P(0) <= e^-10)
#   NAME/rate         (the perf paths) every benchmark thread's samples
#                     (SAMPLE and SKIPPED records) are as many as its CPU
#                     time over the period: within lambda +- 3.29
#                     sqrt(lambda) + 2 (99.9% two-sided, Poisson: a thread
#                     sampled at a fixed period of its CPU time varies less;
#                     2 for the samples at its start and end), where lambda
#                     is at least LAMBDA_MIN.  Fewer: samples lost or taken
#                     at a longer period than the trace says; more: another
#                     thread's or process's samples given to it
#   NAME/tids         of the samples whose address is in one of the printed
#                     objects, the share in an object of the sampling thread
#                     (its private line, its pair's shared line): its 99.9%
#                     Wilson lower bound must exceed 1/2 (the true share is
#                     1; an attribution that ignored the tid would give 1/4
#                     of the private and 1/2 of the shared ones)
#   NAME/pattern      the matrix of the window model (--window 100ms: sample
#                     pairs of two threads on one line; without watchpoints
#                     the comdetective model sees a handful of events here):
#                     of its events, the share in the two pair cells has a
#                     99.9% Wilson lower bound above 1/2 (no structure: 2
#                     cells of 6, 1/3; the true share is 1), and both pair
#                     cells are non-zero.  (Events that share a sample are
#                     not independent: the bound is approximate there.)
# The bounds follow the counts, so a loaded machine (fewer samples in the
# same wall time) gets wider ones; with too few samples or events the case
# is recorded once more, four times as long, before it is judged.
. "$(dirname "$0")/../lib.sh"
. "$UBENCH_SRC/ubrec.sh"

if ! ub_have_recorder || ! ub_have_analyzer; then
	skip soft_sampler "no recorder or analyzer: make first"
	done_tests
fi
if ! ub_build p2p periodic; then
	fail soft_sampler/build "cannot build build/ubench/p2p and periodic"
	done_tests
fi

# judge NAME ID: the three checks on $WORK/ID.*; prints the test lines, or
# "RETRY why" when the counts are too small to judge
judge() {
	local name=$1 id=$2
	"$COMMANALYZE" dump --raw "$WORK/$id.zst" --type sample >"$WORK/$id.samples" 2>/dev/null &&
	"$COMMANALYZE" info "$WORK/$id.zst" >"$WORK/$id.info" 2>/dev/null &&
	"$COMMANALYZE" matrix "$WORK/$id.zst" --format csv --index thread --model window \
		--window 100ms >"$WORK/$id.csv" 2>/dev/null ||
		{ echo "FAIL $name: commanalyze cannot read the trace"; return; }
	python3 - "$name" "$WORK/$id.out" "$WORK/$id.samples" "$WORK/$id.info" "$WORK/$id.csv" \
		"$PERIOD_US" "${RATE:-0}" <<'EOF'
import math, re, sys
name, out, dump, info, csv, period_us, rate = sys.argv[1:8]
rate_only = rate == "only"
rate = rate in ("1", "only")
Z = 3.29  # 99.9% two-sided (99.95% for a one-sided bound)
LAMBDA_MIN = 10
def wilson_lo(k, n):
    if n == 0:
        return 0.0
    p = k / n
    d = 1 + Z * Z / n
    c = p + Z * Z / (2 * n)
    r = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return (c - r) / d
bench_tid, cpu_ms, objs = {}, {}, []
for line in open(out):
    m = re.match(r'thread_info (\d+) tid=(\d+) cpu_ms=([\d.]+)', line)
    if m:
        bench_tid[int(m.group(1))] = int(m.group(2)); cpu_ms[int(m.group(1))] = float(m.group(3))
    m = re.match(r'object \S+ (0x[0-9a-f]+)-(0x[0-9a-f]+) .*threads=([\d,]+)', line)
    if m:
        objs.append((int(m.group(1), 16), int(m.group(2), 16),
                     {int(x) for x in m.group(3).split(',')}))
index_of_tid = {}
for line in open(info):
    f = line.split()
    if len(f) >= 3 and f[0].isdigit() and f[1].isdigit():
        index_of_tid[int(f[1])] = int(f[0])
bench_of_index = {index_of_tid[t]: b for b, t in bench_tid.items() if t in index_of_tid}
if len(bench_of_index) != len(bench_tid) or not bench_tid:
    print(f"FAIL {name}/tids: benchmark threads {sorted(bench_tid.values())} not all in the trace's "
          f"thread table {sorted(index_of_tid)}")
    sys.exit(0)
per_thread, own, other = {}, 0, 0
for line in open(dump):
    m = re.search(r' T(\d+) sample .*addr=(0x[0-9a-f]+)', line)
    if not m:
        continue
    t, a = int(m.group(1)), int(m.group(2), 16)
    per_thread[t] = per_thread.get(t, 0) + 1
    for lo, hi, owners in objs:
        if lo <= a < hi:
            if bench_of_index.get(t) in owners:
                own += 1
            else:
                other += 1
retry = []
# samples per benchmark thread
missing = []
for b, ms in cpu_ms.items():
    lam = ms * 1000 / float(period_us)
    if lam >= LAMBDA_MIN and per_thread.get(index_of_tid[bench_tid[b]], 0) == 0:
        missing.append(f"thread {b} ({ms:.0f} ms of CPU, {lam:.0f} samples expected)")
if missing:
    print(f"FAIL {name}/samples: no sample in " + ", ".join(missing))
else:
    print(f"PASS {name}/samples")
if rate:
    taken = {}
    for line in open(info):
        f = line.split()
        if len(f) >= 12 and f[0].isdigit() and f[1].isdigit():
            taken[int(f[0])] = int(f[5]) + int(f[11])    # samples + skipped
    off = []
    for b, ms in cpu_ms.items():
        lam = ms * 1000 / float(period_us)
        k = taken.get(index_of_tid[bench_tid[b]], 0)
        d = Z * math.sqrt(lam) + 2
        print(f"INFO {name}/rate: thread {b}: {k} samples, {lam:.0f} expected")
        if lam >= LAMBDA_MIN and abs(k - lam) > d:
            off.append(f"thread {b}: {k} samples for {ms:.0f} ms of CPU ({lam:.0f} +- {d:.0f} expected)")
    print(f"FAIL {name}/rate: " + ", ".join(off) if off else f"PASS {name}/rate")
if rate_only:
    sys.exit(0)
n = own + other
if n < 10:
    retry.append(f"{n} samples in the benchmark's objects")
else:
    lo = wilson_lo(own, n)
    v = "PASS" if lo > 0.5 else "FAIL"
    print(f"{v} {name}/tids" + ("" if v == "PASS" else
          f": {own} of {n} samples in objects are in the sampling thread's own "
          f"(lower bound {lo:.2f} <= 0.5)"))
# pattern: matrix cells in events (each weighs its sample's period, in ns)
rows = [l.strip().split(',') for l in open(csv) if l.strip()]
hdr = rows[0][1:]
idx = [int(re.sub(r'\D', '', h.split('(')[0]) or -1) for h in hdr]
cells = {}
for r in rows[1:]:
    i = int(re.sub(r'\D', '', r[0].split('(')[0]) or -1)
    for j, v in zip(idx, r[1:]):
        if i < j and float(v) > 0:
            cells[(i, j)] = float(v)
unit = float(period_us) * 1000
ev = {k: round(v / unit) for k, v in cells.items()}
def bench_pair(k):
    a, b = bench_of_index.get(k[0]), bench_of_index.get(k[1])
    return a is not None and b is not None and a // 2 == b // 2
pair_ev = sum(v for k, v in ev.items() if bench_pair(k))
all_ev = sum(ev.values())
if all_ev < 20:
    retry.append(f"{all_ev} communication events")
else:
    lo = wilson_lo(pair_ev, all_ev)
    npairs = sum(1 for k in ev if bench_pair(k))
    if lo > 0.5 and npairs == 2:
        print(f"PASS {name}/pattern")
    else:
        print(f"FAIL {name}/pattern: {pair_ev} of {all_ev} events in the pair cells "
              f"(lower bound {lo:.2f}), {npairs} of 2 pair cells non-zero; cells {ev}")
if retry:
    print("RETRY " + "; ".join(retry))
EOF
}

# soft_case NAME ENV... : record p2p (twice as long as needed on a quiet
# machine), judge, and once more four times as long if the counts were small
PERIOD_US=1000
soft_case() {
	local name=$1; shift
	local n=40000000 try
	for try in 1 2; do
		UB_RC=0
		env "$@" timeout -k 5 "$UB_TIMEOUT" "$COMMREC" -q -f -o "$WORK/$name.zst" -s soft ${SOFT_W--w 0} \
			-c "$PERIOD_US" -- "$UBENCH/p2p" -t 4 -n "$n" -s 0.5 -S 3 \
			>"$WORK/$name.out" 2>"$WORK/$name.err" || UB_RC=$?
		if [ "$UB_RC" -ne 0 ]; then
			fail "soft/$name" "commrec exited $UB_RC: $(tail -n 3 "$WORK/$name.err" | tr '\n' '|')"
			return
		fi
		judge "soft/$name" "$name" >"$WORK/$name.res"
		grep -q '^RETRY' "$WORK/$name.res" || break
		n=$((n * 4))
	done
	ub_counts "soft/$name/counts" "$WORK/$name.zst"
	sed 's/^RETRY/FAIL soft\/'"$name"': too few to judge after a 4x longer run:/' "$WORK/$name.res"
	grep -q '^FAIL' "$WORK/$name.res" && ct_failed=1
	grep -q '^RETRY' "$WORK/$name.res" && ct_failed=1
	return 0
}

# periodic_case NAME ENV... : record the periodic program (-w 0, the
# period): every thread's samples as many as its CPU time over the period
periodic_case() {
	local name=$1; shift
	UB_RC=0
	env "$@" timeout -k 5 "$UB_TIMEOUT" "$COMMREC" -q -f -o "$WORK/$name.zst" -s soft -w 0 \
		-c "$PERIOD_US" -- "$UBENCH/periodic" -t 2 -n 300 -b 300 -i 10000 \
		>"$WORK/$name.out" 2>"$WORK/$name.err" || UB_RC=$?
	if [ "$UB_RC" -ne 0 ]; then
		fail "soft/$name" "commrec exited $UB_RC: $(tail -n 3 "$WORK/$name.err" | tr '\n' '|')"
		return
	fi
	RATE=only judge "soft/$name" "$name" >"$WORK/$name.res"
	cat "$WORK/$name.res"
	grep -q '^FAIL' "$WORK/$name.res" && ct_failed=1
	return 0
}

RATE=1 soft_case cpu_wide COMMTRACE_SOFT_TIMER=0 COMMTRACE_SOFT_CPU_WIDE=1
if grep -q '^ *sampler_rings=cpu-wide' "$WORK/cpu_wide.info"; then
	pass soft/cpu_wide/path
else
	skip soft/cpu_wide/path "CPU-wide sampling events do not open here: $(grep -m1 'sampler_rings\|sampler_fallback_reason' "$WORK/cpu_wide.info")"
fi
# (the CPU-wide events sample a fixed grid of the CPU's clock: not judged on
# the periodic program, where they are known to be wrong, commrec(1))
RATE=1 soft_case inherited -u COMMTRACE_SOFT_CPU_WIDE COMMTRACE_SOFT_TIMER=0
if grep -q '^ *sampler_rings=inherited' "$WORK/inherited.info"; then
	pass soft/inherited/path
elif grep -q '^ *sampler_fallback=posix-timer' "$WORK/inherited.info"; then
	skip soft/inherited/path "perf events denied here, the timer was used: $(grep -m1 'sampler_fallback_reason' "$WORK/inherited.info")"
else
	fail soft/inherited/path "the trace does not say sampler_rings=inherited"
fi
if grep -q '^ *sampler_rings=inherited' "$WORK/inherited.info"; then
	periodic_case periodic -u COMMTRACE_SOFT_CPU_WIDE COMMTRACE_SOFT_TIMER=0
else
	skip soft/periodic "no inherited per-CPU rings here (see soft/inherited/path)"
fi
soft_case timer COMMTRACE_SOFT_TIMER=1
check soft/timer/path grep -q '^ *sampler_fallback=posix-timer' "$WORK/timer.info"

SOFT_W="" soft_case cpu_wp COMMTRACE_SOFT_TIMER=0
info=$WORK/cpu_wp.info
if grep -q '^ *watchpoint_arming=cpu' "$info"; then
	"$COMMANALYZE" dump --raw "$WORK/cpu_wp.zst" --type wp_arm,wp_hit >"$WORK/cpu_wp.wp" 2>/dev/null
	arms=$(grep -c ' wp_arm ' "$WORK/cpu_wp.wp")
	hits=$(grep -c ' wp_hit ' "$WORK/cpu_wp.wp")
	s_arms=$(sed -n 's/^ *cpu_watchpoint_arms=//p' "$info")
	s_hits=$(sed -n 's/^ *cpu_watchpoint_hits=//p' "$info")
	echo "INFO soft/cpu_wp: $arms arms, $hits hits, $(sed -n 's/^ *cpu_watchpoint_other_hits=//p' "$info") hits by other threads"
	nthr=$(sed -n 's/^ *threads=//p' "$info" | head -n 1)
	if [ "$arms" -le "$s_arms" ] && [ "$hits" -le "$s_hits" ] &&
		[ $((s_arms - arms + s_hits - hits)) -le "${nthr:-0}" ]; then
		pass soft/cpu_wp/records
	else
		fail soft/cpu_wp/records "$arms WP_ARM and $hits WP_HIT records, SUMMARY $s_arms and $s_hits ($nthr threads)"
	fi
	if out=$(python3 "$CT_ROOT/tests/kernels/pattern.py" --wp-check "$WORK/cpu_wp.wp"); then
		pass soft/cpu_wp/rules
	else
		fail soft/cpu_wp/rules "$(echo "$out" | head -3 | tr '\n' '|')"
	fi
else
	skip soft/cpu_wp/path "watchpoints per thread here: $(sed -n 's/^ *watchpoint_cpu_reason=//p' "$info")$(grep -m1 'sampler_delivery' "$info")"
fi
done_tests
