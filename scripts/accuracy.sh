#!/usr/bin/env bash
# Accuracy of commanalyze's models on the microbenchmarks (tests/ubench),
# measured against the ground truth: the `exact` model on a full trace
# (commrec --sampler inst --full).
#
#   scripts/accuracy.sh [-o FILE.md] [--tsv FILE] [--keep DIR] [--quick|--full-only]
#                       [--configs ID,ID...]
#
# Builds the microbenchmarks with record/commrec-cc (and plainly with gcc, for
# the soft sampler) into a temporary directory; per benchmark records
#   full  commrec --sampler inst --full        (every access; NFULL iterations)
#   inst  commrec --sampler inst -c IPERIOD --owner-window 0
#                                              (every IPERIOD-th load / store;
#                                              no line monitor: comdetective's
#                                              method, whose pattern this row shows)
#   soft  commrec --sampler soft               (timer samples, the plain build)
# and analyzes them: exact and emulate (default --emulate-period) on the full
# trace, comdetective on the inst and soft traces.  Prints the markdown
# accuracy table (doc/accuracy.md is its output: -o doc/accuracy.md).
#
#   -o FILE      write the whole document there (default: the table on stdout)
#   --tsv FILE   one line per benchmark and metric: BENCH METRIC VALUE (what
#                tests/accuracy.sh, make accuracy, asserts on)
#   --keep DIR   keep the programs, traces, outputs and matrices in DIR
#   --quick      soft runs of half the benchmarks' default length (but p2p)
#   --full-only  only the full recordings, analyzed with exact (the metrics
#                exact_*; no document): what tests/e2e/exact_invariants.sh
#                checks in make check
#   --configs L  only these configurations (IDs below, comma-separated)
#   --spread R   instead of all that: the microbenchmarks' executions differ;
#                R rounds, each a full recording (seed r) and an inst one
#                with the line monitor (seed 100 + r) of every
#                configuration, interleaved: exact's transfers per shared
#                access over the executions, the inst owner estimate's, and
#                the monitor's on the full trace against exact on it (a
#                markdown table; doc/accuracy.md quotes one)
# Environment: B (build directory, default build), CC (gcc), NFULL (4000000),
# NINST (60000000), IPERIOD (10000), SEEDS (10: emulate's draws per estimator,
# --seed 1..SEEDS, on each full trace).
#
# Estimators (commanalyze --estimator): on each full trace, emulate at its
# default period (10000) with the comdetective and the owner estimator, and
# the owner estimator at a tenth of it (1000), SEEDS runs each (--seed):
# volume / exact, false share - exact's, and whether exact's volume lies in
# the report's 90% interval (report --format json: totals.transfers_90).
#
# The realistic kernels (tests/kernels, built by make into B/kernels/NAME-inst)
# are recorded full too (KERNELS below) and analyzed with exact and with
# emulate's comdetective and owner estimators at the default period, SEEDS
# runs each: the estimators' table only (their patterns are
# tests/e2e/kernels.sh's).
#
# The owner estimator under --sampler inst: every benchmark and kernel is
# recorded once more with the inst sampler at -c IPERIOD and the line
# monitor (commrec --owner-window OWNJ, default 64) and analyzed with
# --estimator owner and comdetective: another execution, so compared with
# exact as transfers per shared access (the benchmarks' own counts; the
# kernels do the same work as their full recording: transfers per run).
#
# Thread matching.  A trace numbers threads in the order they started, not
# the order the benchmark created them, so two recordings of one benchmark
# may number them differently.  The comparison therefore maps every matrix
# row to the benchmark's own thread index by tid (the benchmark prints
# `thread_info I tid=N`, the matrix labels are `TK(tid)`); the main thread is
# `m`.  This is why the cross-trace comparisons are computed here and not
# with `commanalyze sweep --reference TRACE` (it matches threads by index).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$ROOT/$B ;; esac
COMMREC=$BD/commrec
COMMANALYZE=$BD/commanalyze
CC=${CC:-gcc}
OUT='' TSV='' KEEP='' QUICK=0 FULL_ONLY=0 ONLY= SPREAD=0
while [ $# -gt 0 ]; do
	case $1 in
	-o) OUT=$2; shift 2 ;;
	--tsv) TSV=$2; shift 2 ;;
	--keep) KEEP=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--full-only) FULL_ONLY=1; shift ;;
	--configs) ONLY=,$2,; shift 2 ;;
	--spread) SPREAD=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//; /^set -eu/d'; exit 0 ;;
	*) echo "accuracy.sh: unknown argument '$1' (see -h)" >&2; exit 2 ;;
	esac
done
[ $FULL_ONLY = 1 ] && [ -n "$OUT" ] &&
	{ echo "accuracy.sh: --full-only makes no document (-o)" >&2; exit 2; }
NFULL=${NFULL:-4000000}
IPERIOD=${IPERIOD:-10000}
NINST=${NINST:-60000000}
SEEDS=${SEEDS:-10}
OWNJ=${OWNJ:-64}
EPERIOD=10000   # emulate's default --emulate-period

for f in "$COMMREC" "$COMMANALYZE" "$BD/libcommrec-inst.so" "$BD/libcommrec.so"; do
	[ -e "$f" ] || { echo "accuracy.sh: $f missing: make B=$B first" >&2; exit 3; }
done
command -v python3 >/dev/null || { echo "accuracy.sh: needs python3" >&2; exit 3; }
export COMMREC_INST_LIBDIR=$BD

if [ -n "$KEEP" ]; then
	mkdir -p "$KEEP"; W=$(cd "$KEEP" && pwd)
else
	W=$(mktemp -d "${TMPDIR:-/tmp}/ct-accuracy.XXXXXX")
	trap 'rm -rf "$W"' EXIT
fi
t_start=$(date +%s)

# The configurations: ID PROGRAM ARGS.  Two benchmark threads, one per cpu of
# the 2-cpu VM, except p2p (two pairs: four threads).  read_write has two
# (the writer and one reader): a second reader would share a cpu with the
# writer and meet it only at context switches.
CONFIGS=(
	"write_volume write_volume -t 2 -s 0.5"
	"false_sharing false_sharing -t 2 -f 0.5"
	"false_sharing_f0.9 false_sharing -t 2 -f 0.9"
	"read_write read_write -t 2 -r 0.5"
	"p2p p2p -t 4 -s 0.5"
	"objects objects -t 2 -k malloc -s 0.5"
)

# The kernels: ID ARGS (B/kernels/ID-inst).  Sizes: the owner estimator's
# error is sampling error, about 1 / sqrt(the sampled accesses on the lines
# that communicate); these give each kernel 200 to 800 effective events at
# the default period (report: effective events), so that 15% is more than
# two standard errors, at 2 to 10 s of full recording each.
KERNELS=(
	"stencil -t 4 -c 130 -s 60000"
	"omp_reduce -t 4 -m 128 -i 4000"
	"alltoall -t 4 -k 16384 -r 50"
	"pipeline -t 4 -i 3000 -l 256"
)

if [ -n "$ONLY" ]; then
	kept=() kk=()
	for c in "${CONFIGS[@]}"; do
		case $ONLY in *,"${c%% *}",*) kept+=("$c") ;; esac
	done
	for c in "${KERNELS[@]}"; do
		case $ONLY in *,"${c%% *}",*) kk+=("$c") ;; esac
	done
	[ $((${#kept[@]} + ${#kk[@]})) -gt 0 ] ||
		{ echo "accuracy.sh: --configs: no such configuration" >&2; exit 2; }
	CONFIGS=("${kept[@]}") KERNELS=("${kk[@]}")
fi
[ $FULL_ONLY = 0 ] || KERNELS=()
# the programs the configurations run
progs=$(for c in "${CONFIGS[@]}"; do read -r _ p _ <<<"$c"; echo "$p"; done | sort -u)

CFLAGS=(-std=c11 -D_GNU_SOURCE -O2 -pthread)
for p in $progs; do
	CC=$CC "$ROOT/record/commrec-cc" "${CFLAGS[@]}" "$ROOT/tests/ubench/$p.c" -o "$W/$p.inst" 2>"$W/$p.cc.err" ||
		{ echo "accuracy.sh: commrec-cc $p failed: $(head -c 400 "$W/$p.cc.err")" >&2; exit 1; }
	[ $FULL_ONLY = 1 ] && continue    # the plain build is for the soft recordings
	$CC "${CFLAGS[@]}" "$ROOT/tests/ubench/$p.c" -o "$W/$p.plain" 2>>"$W/$p.cc.err" ||
		{ echo "accuracy.sh: $CC $p failed" >&2; exit 1; }
done

# Every recording runs with pin.so preloaded: benchmark thread i (the i-th
# thread the program creates with a start routine outside commrec's
# runtime) is pinned to cpu i mod ncpus, so the two threads of a pair always
# run on different cpus.  Unpinned, the scheduler often keeps two threads on
# one cpu (the full recording's writer thread busies the other): they then
# alternate in time slices and communicate only at context switches.
# Observed unpinned on this VM: exact found 47 transfers in one full run of
# write_volume and 109000 in another; p2p pairs 18 vs 53302 transfers.
# Pinned: p2p pairs 132k-163k each in 4 runs.  Pinning decides where the
# threads run, not what they do: the ground truth stays the exact model on
# the very execution recorded.
cat >"$W/pin.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
static int next_cpu;
int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
	Dl_info di;
	if (!dladdr((void *)fn, &di) || !di.dli_fname || strstr(di.dli_fname, "commrec"))
		return real(t, attr, fn, arg);  /* the runtime's own threads */
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(__atomic_fetch_add(&next_cpu, 1, __ATOMIC_RELAXED) % (n > 0 ? n : 1), &set);
	pthread_attr_t a;
	if (attr)
		a = *attr;
	else
		pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, sizeof set, &set);
	int r = real(t, &a, fn, arg);
	if (!attr)
		pthread_attr_destroy(&a);
	return r;
}
EOF
$CC -O2 -shared -fPIC -o "$W/pin.so" "$W/pin.c" -ldl 2>"$W/pin.err" ||
	{ echo "accuracy.sh: cannot build pin.so: $(head -c 300 "$W/pin.err")" >&2; exit 1; }
# pin.so is preloaded into commrec too (it passes LD_PRELOAD on): a sanitizer
# build of commrec (make check ASAN=1) must not insist on coming first
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# rec ID MODE PROG ARGS...: trace $W/ID.MODE.zst, output $W/ID.MODE.out
# (MODE kfull: a kernel, full)
rec() {
	local id=$1 mode=$2 prog=$3; shift 3
	local opts bin rc=0
	case $mode in
	# full: with the line monitor too (its stores sampled every IPERIOD on
	# average): exact and the monitor's estimate of one execution
	full) opts=(--sampler inst --full=all --owner-window "$OWNJ" -c "$IPERIOD"); bin=$W/$prog.inst ;;
	kfull) opts=(--sampler inst --full=all --owner-window "$OWNJ" -c "$IPERIOD")
	       bin=$BD/kernels/$prog-inst; mode=full ;;
	iown) opts=(--sampler inst -c "$IPERIOD" --owner-window "$OWNJ"); bin=$W/$prog.inst ;;
	kiown) opts=(--sampler inst -c "$IPERIOD" --owner-window "$OWNJ"); bin=$BD/kernels/$prog-inst
	       mode=iown ;;
	inst) opts=(--sampler inst -c "$IPERIOD" --owner-window 0); bin=$W/$prog.inst ;;
	soft) opts=(--sampler soft); bin=$W/$prog.plain ;;
	esac
	# full: a ring of 1M units per thread (64 MiB) holds the whole run, so
	# the threads do not run at the writer's pace
	if [ "$mode" = full ]; then
		LD_PRELOAD=$W/pin.so COMMTRACE_RING_UNITS=1048576 timeout -k 5 120 "$COMMREC" -q -f -o "$W/$id.$mode.zst" \
			"${opts[@]}" -- "$bin" "$@" >"$W/$id.$mode.out" 2>"$W/$id.$mode.err" || rc=$?
	else
		LD_PRELOAD=$W/pin.so timeout -k 5 120 "$COMMREC" -q -f -o "$W/$id.$mode.zst" "${opts[@]}" -- "$bin" "$@" \
			>"$W/$id.$mode.out" 2>"$W/$id.$mode.err" || rc=$?
	fi
	if [ $rc -ne 0 ]; then
		echo "accuracy.sh: commrec ($mode) $prog $* exited $rc: $(tail -n 3 "$W/$id.$mode.err")" >&2
		exit 1
	fi
}

# mat ID MODE MODEL KIND: directed thread matrix CSV $W/ID.MODE.MODEL.KIND.csv
mat() {
	"$COMMANALYZE" matrix "$W/$1.$2.zst" --model "$3" --kind "$4" --index thread --directed \
		--format csv >"$W/$1.$2.$3.$4.csv" 2>"$W/$1.$2.$3.$4.err" ||
		{ echo "accuracy.sh: commanalyze matrix $1.$2 --model $3 failed: $(head -c 300 "$W/$1.$2.$3.$4.err")" >&2; exit 1; }
}

# est ID NAME ESTIMATOR PERIOD J SEED: emulate's JSON report on the full trace
est() {
	local j=()
	[ "$5" = default ] || j=(--owner-window "$5")
	"$COMMANALYZE" report "$W/$1.full.zst" --format json --model emulate --estimator "$3" \
		--emulate-period "$4" "${j[@]}" --seed "$6" >"$W/$1.est.$2.$6.json" 2>"$W/$1.est.err" ||
		{ echo "accuracy.sh: commanalyze report $1.full --estimator $3 failed: $(head -c 300 "$W/$1.est.err")" >&2; exit 1; }
}
# fown ID: exact without synchronization's accesses (the monitor does not see
# them) and the owner estimate from the monitor's records, on ID's full trace
fown() {
	"$COMMANALYZE" report "$W/$1.full.zst" --format json --model exact --sync exclude \
		>"$W/$1.exact.exclude.json" 2>"$W/$1.fown.err" &&
		"$COMMANALYZE" report "$W/$1.full.zst" --format json --estimator owner \
			>"$W/$1.fown.json" 2>>"$W/$1.fown.err" ||
		{ echo "accuracy.sh: commanalyze report $1.full (monitor) failed: $(head -c 300 "$W/$1.fown.err")" >&2; exit 1; }
}
# iest ID ESTIMATOR: the JSON report of ID's inst recording with the line monitor
iest() {
	"$COMMANALYZE" report "$W/$1.iown.zst" --format json --estimator "$2" >"$W/$1.iown.$2.json" \
		2>"$W/$1.iown.$2.err" ||
		{ echo "accuracy.sh: commanalyze report $1.iown --estimator $2 failed: $(head -c 300 "$W/$1.iown.$2.err")" >&2; exit 1; }
}

# the estimator runs: NAME ESTIMATOR PERIOD J (--owner-window: the owner
# estimator's window; default 64 x the period, or 1: a store's own transfers)
ESTS=("comdetective comdetective $EPERIOD default" "owner owner $EPERIOD default"
      "owner_j1 owner $EPERIOD 1" "owner_fine owner $((EPERIOD / 10)) default")

# estimators ID [NAME...]: the estimator runs (all, or those NAMEs) on
# SEEDS draws each, on the full trace of ID
estimators() {
	local id=$1 e name en ep ej s; shift
	for e in "${ESTS[@]}"; do
		read -r name en ep ej <<<"$e"
		[ $# -eq 0 ] || case " $* " in *" $name "*) ;; *) continue ;; esac
		for s in $(seq 1 "$SEEDS"); do est "$id" "$name" "$en" "$ep" "$ej" "$s"; done
	done
}
KESTS="comdetective owner"   # the kernels' estimator runs

# --spread R: R rounds of a full and an inst recording of every
# configuration (interleaved), then the table
if [ "$SPREAD" -gt 0 ]; then
	sids=()
	for r in $(seq 1 "$SPREAD"); do
		for c in "${CONFIGS[@]}"; do
			read -r id prog args <<<"$c"
			sids+=("$id.r$r")
			# shellcheck disable=SC2086
			rec "$id.r$r" full "$prog" $args -n "$NFULL" -S "$r"
			"$COMMANALYZE" report "$W/$id.r$r.full.zst" --format json --model exact \
				>"$W/$id.r$r.exact.json" 2>>"$W/$id.r$r.fown.err"
			fown "$id.r$r"
			rm -f "$W/$id.r$r.full.zst"
			# shellcheck disable=SC2086
			rec "$id.r$r" iown "$prog" $args -n "$NINST" -S $((100 + r))
			iest "$id.r$r" owner
		done
	done
	python3 - "$W" "${sids[@]}" <<'PY'
import json, statistics, sys
W, sids = sys.argv[1], sys.argv[2:]
def shared(path):
    n = 0
    for line in open(path):
        f = line.split()
        if f[:1] == ['thread'] and len(f) > 1:
            kv = dict(x.split('=', 1) for x in f[2:])
            n += sum(int(kv.get(k, 0)) for k in ('shared_stores', 'shared_loads', 'shared_atomics'))
    return max(n, 1)
def totals(path):
    return json.load(open(path))['totals']
runs = {}
for s in sids:
    b = s.rsplit('.r', 1)[0]
    ex = totals(f'{W}/{s}.exact.json')['transfers'] / shared(f'{W}/{s}.full.out')
    io = totals(f'{W}/{s}.iown.owner.json')['transfers'] / shared(f'{W}/{s}.iown.out')
    fo = totals(f'{W}/{s}.fown.json')['transfers'] / max(1, totals(f'{W}/{s}.exact.exclude.json')['transfers'])
    runs.setdefault(b, []).append((ex, io, fo))
print("| benchmark | runs | exact: transfers per shared access, min-max (max/min) | exact's runs within 30% of its median | inst, owner: per shared access, min-max | inst runs inside exact's range | inst runs within 30% of exact's median | one execution: owner / exact, min-max | within 30% |")
print("|---|---|---|---|---|---|---|---|---|")
for b, rs in runs.items():
    ex, io, fo = ([r[k] for r in rs] for k in range(3))
    med = statistics.median(ex)
    near = lambda v: abs(v / med - 1) <= 0.3
    print(f"| {b} | {len(rs)} | {min(ex):.4f}-{max(ex):.4f} ({max(ex) / min(ex):.1f}) | {sum(map(near, ex))}/{len(ex)} "
          f"| {min(io):.4f}-{max(io):.4f} | {sum(min(ex) <= v <= max(ex) for v in io)}/{len(io)} "
          f"| {sum(map(near, io))}/{len(io)} | {min(fo):.2f}-{max(fo):.2f} | {sum(abs(v - 1) <= 0.3 for v in fo)}/{len(fo)} |")
PY
	exit 0
fi

ids=()
for c in "${CONFIGS[@]}"; do
	read -r id prog args <<<"$c"
	ids+=("$id")
	# shellcheck disable=SC2086
	rec "$id" full "$prog" $args -n "$NFULL" -S 1
	for k in all true false; do mat "$id" full exact "$k"; done
	[ $FULL_ONLY = 1 ] && continue
	for k in all false; do mat "$id" full emulate "$k"; done
	fown "$id"
	estimators "$id"
	# shellcheck disable=SC2086
	rec "$id" inst "$prog" $args -n "$NINST" -S 2
	if [ $QUICK = 1 ]; then
		# half the default length: ~150 samples per thread; p2p keeps its
		# default (its four threads share two cpus: a longer run averages
		# how long each pair ran together)
		case $prog in
		write_volume|objects) ns=75000000 ;;
		p2p) ns=150000000 ;;
		*) ns=50000000 ;;
		esac
		# shellcheck disable=SC2086
		rec "$id" soft "$prog" $args -n "$ns" -S 3
	else
		# shellcheck disable=SC2086
		rec "$id" soft "$prog" $args -S 3
	fi
	for k in all false; do
		mat "$id" inst comdetective "$k"
		mat "$id" soft comdetective "$k"
	done
	# shellcheck disable=SC2086
	rec "$id" iown "$prog" $args -n "$NINST" -S 2
	for e in owner comdetective; do iest "$id" "$e"; done
done
kids=()
for c in "${KERNELS[@]}"; do
	read -r id args <<<"$c"
	kids+=("$id")
	[ -x "$BD/kernels/$id-inst" ] || { echo "accuracy.sh: $BD/kernels/$id-inst missing: make B=$B first" >&2; exit 3; }
	# shellcheck disable=SC2086
	rec "$id" kfull "$id" $args
	# exact with the accesses that synchronization calls imply (what
	# emulate sees), and without them (what a sampled recording's line
	# monitor sees: the runtime emulates them only in full mode)
	for sy in include; do
		"$COMMANALYZE" report "$W/$id.full.zst" --format json --model exact --sync $sy \
			>"$W/$id.exact.$sy.json" 2>"$W/$id.est.err" ||
			{ echo "accuracy.sh: commanalyze report $id --model exact failed: $(head -c 300 "$W/$id.est.err")" >&2; exit 1; }
	done
	fown "$id"
	# shellcheck disable=SC2086
	estimators "$id" $KESTS
	# shellcheck disable=SC2086
	rec "$id" kiown "$id" $args
	for e in owner comdetective; do iest "$id" "$e"; done
done
t_end=$(date +%s)

cat >"$W/acc.py" <<'EOF'
import csv, math, re, sys
sys.dont_write_bytecode = True   # nothing written into the source tree
sys.path.insert(0, sys.argv.pop(1))
from pattern import pearson  # tests/kernels/pattern.py: the one copy

W, full_only, seeds = sys.argv[1], sys.argv[2] == '1', int(sys.argv[3])
ests = [e.split() for e in sys.argv[4].split(',')]
kids = [k for k in sys.argv[5].split(',') if k]
kests = sys.argv[6].split()
ids = sys.argv[7:]

def bench_out(path):
    """benchmark output -> (tid -> index, per-thread counts, program)"""
    tid2i, counts, prog = {}, {}, ''
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == 'bench':
            prog = f[1]
        elif f[0] == 'thread' and len(f) > 1:
            counts[int(f[1])] = {k: int(v) for k, v in (x.split('=', 1) for x in f[2:])}
        elif f[0] == 'thread_info':
            kv = dict(x.split('=', 1) for x in f[2:])
            tid2i[int(kv['tid'])] = int(f[1])
    return tid2i, counts, prog

def matrix(path, tid2i):
    """directed CSV matrix -> {(dst, src): value}; threads as benchmark
    indices, 'm' for the others (the main thread)"""
    rows = list(csv.reader(open(path)))
    def key(label):
        m = re.search(r'\((\d+)\)', label)
        return tid2i.get(int(m.group(1)), 'm') if m else 'm'
    cols = [key(c) for c in rows[0][1:]]
    m = {}
    for r in rows[1:]:
        d = key(r[0])
        for s, v in zip(cols, r[1:]):
            if d != s:
                m[(d, s)] = m.get((d, s), 0.0) + float(v)
    return m

def sym(m, nodes):
    """pairs i < j of M + M^T"""
    return {(nodes[a], nodes[b]): m.get((nodes[a], nodes[b]), 0.0) + m.get((nodes[b], nodes[a]), 0.0)
            for a in range(len(nodes)) for b in range(a + 1, len(nodes))}


def shares(m, n):
    """matrix scaled to sum 1"""
    t = sum(m.values())
    return {k: (v / t if t else 0.0) for k, v in m.items()}

def shared_accesses(c):
    return sum(x.get('shared_stores', 0) + x.get('shared_loads', 0) + x.get('shared_atomics', 0)
               for x in c.values())

def expected(prog, d, s):
    """directed cell d <- s (benchmark threads) where the benchmark puts its
    communication (tests/ubench/README.md)"""
    if 'm' in (d, s):
        return False
    if prog == 'p2p':
        return d // 2 == s // 2
    if prog == 'read_write':
        return s == 0 and d != 0      # readers load what thread 0 stores
    return True                       # all-to-all

out = []
def put(i, name, v):
    out.append((i, name, v))

for i in ids:
    tids, counts, prog = bench_out(f'{W}/{i}.full.out')
    nt = len(counts)
    nodes = ['m'] + list(range(nt))
    bt = list(range(nt))
    ex = {k: matrix(f'{W}/{i}.full.exact.{k}.csv', tids) for k in ('all', 'true', 'false')}
    tot = sum(ex['all'].values())
    put(i, 'threads', nt)
    put(i, 'exact_volume', tot)
    put(i, 'exact_per_access', tot / max(1, shared_accesses(counts)))
    put(i, 'exact_false_frac', sum(ex['false'].values()) / max(1.0, tot))
    put(i, 'exact_main_share', sum(v for (d, s), v in ex['all'].items() if 'm' in (d, s)) / max(1.0, tot))
    # cells the benchmark never lets communicate (p2p: between pairs;
    # read_write: readers among themselves and into the writer)
    put(i, 'exact_unexpected', sum(v for (d, s), v in ex['all'].items()
                                   if 'm' not in (d, s) and not expected(prog, d, s)))
    # a line only written (write_volume, false_sharing, p2p, objects): a
    # transfer into a thread makes it the writer and the next transfer on
    # that line takes the line from it, so with two writers per line the
    # two directions differ by at most 1 per line
    asym = 0.0
    for kind in ('true', 'false'):
        for a in bt:
            for b in bt:
                if a < b:
                    asym = max(asym, abs(ex[kind].get((a, b), 0) - ex[kind].get((b, a), 0)))
    put(i, 'exact_direction_asym', asym)
    # transfers into a thread <= its accesses to shared data
    over = max(sum(v for (d, s), v in ex['all'].items() if d == a)
               - (counts[a].get('shared_stores', 0) + counts[a].get('shared_loads', 0)
                  + counts[a].get('shared_atomics', 0)) for a in bt)
    put(i, 'exact_in_over_accesses', over)
    exs = sym(ex['all'], nodes)
    exp_pairs = [k for k in exs if 'm' not in k and (expected(prog, k[0], k[1]) or expected(prog, k[1], k[0]))]
    runs = [] if full_only else [('emulate', 'full', 'emulate'), ('inst', 'inst', 'comdetective'),
                                 ('soft', 'soft', 'comdetective')]
    put(i, 'exact_expected_share', sum(v for (d, s), v in ex['all'].items() if expected(prog, d, s)) / max(1.0, tot))
    for name, mode, model in runs:
        t2, c2, _ = bench_out(f'{W}/{i}.{mode}.out')
        m = matrix(f'{W}/{i}.{mode}.{model}.all.csv', t2)
        mf = matrix(f'{W}/{i}.{mode}.{model}.false.csv', t2)
        A = sum(m.values())
        put(i, f'{name}_volume', A)
        if name == 'emulate':      # same execution: volumes compare
            put(i, 'emulate_ratio', A / tot if tot else float('nan'))
        else:                      # other execution: per shared access
            put(i, f'{name}_rate_ratio', (A / max(1, shared_accesses(c2))) /
                (tot / max(1, shared_accesses(counts))) if tot else float('nan'))
        put(i, f'{name}_false_frac', sum(mf.values()) / A if A else float('nan'))
        # the share of the model's volume in the directed cells the
        # benchmark communicates in
        put(i, f'{name}_expected_share', sum(v for (d, s), v in m.items() if expected(prog, d, s)) / A if A else 0.0)
        # pattern: symmetric cells, main thread included (as compare.c)
        ms = sym(m, nodes)
        keys = sorted(exs, key=str)
        av, rv = [ms.get(k, 0.0) for k in keys], [exs[k] for k in keys]
        R = sum(rv)
        put(i, f'{name}_pearson', pearson(av, rv))
        put(i, f'{name}_shape', sum(abs(x / A - y / R) for x, y in zip(av, rv)) if A and R else 2.0)
        # top-k: are the model's k heaviest pairs the k pairs the benchmark
        # communicates in?
        k = len(exp_pairs)
        top = sorted(ms, key=lambda p: -ms[p])[:k]
        put(i, f'{name}_topk', len(set(top) & set(exp_pairs)) / k if (k and A) else 0.0)

# ---- the estimators: SEEDS reports each on the full trace --------------------
def report_figures(path):
    """volume, (lo, hi) or None, false share, variance from a JSON report"""
    import json
    t = json.load(open(path))['totals']
    vol = t['transfers']
    return vol, t['transfers_90'], (t['false'] / vol if vol else float('nan')), t['variance']

def estimator_runs(i, tot, xf, names):
    """the SEEDS reports of the estimator runs names on ID's full trace
    against exact's volume tot and false share xf"""
    for name in names:
        ratios, dfs, cover, vols, vars_ = [], [], 0, [], []
        for s in range(1, seeds + 1):
            vol, ci, fa, var = report_figures(f'{W}/{i}.est.{name}.{s}.json')
            ratios.append(vol / tot if tot else float('nan'))
            dfs.append(abs(fa - xf) if vol else 1.0)
            cover += bool(ci) and ci[0] <= tot <= ci[1]
            vols.append(vol)
            vars_.append(var)
        # the mean of the SEEDS independent estimates against exact, in
        # standard errors estimated from the runs' own variance estimates
        # (unbiased for the owner estimator): sqrt(mean variance / SEEDS)
        mv = sum(vars_) / seeds
        put(i, f'{name}_mean_z', (sum(vols) / seeds - tot) / math.sqrt(mv / seeds) if mv > 0 else 0.0)
        put(i, f'{name}_runs', seeds)
        put(i, f'{name}_ratio_min', min(ratios))
        put(i, f'{name}_ratio_max', max(ratios))
        put(i, f'{name}_ratio_mean', sum(ratios) / len(ratios))
        put(i, f'{name}_within15', sum(abs(r - 1) <= 0.15 for r in ratios))
        put(i, f'{name}_false_within05', sum(d <= 0.05 for d in dfs))
        put(i, f'{name}_false_err_max', max(dfs))
        put(i, f'{name}_covered', cover)

# the false share exact's can have in any execution of false_sharing at
# f=0.9 (tests/accuracy.sh): from 0.5 (coarse interleaving) to 0.94
# (strict alternation)
SPLIT_RANGE = {'false_sharing_f0.9': (0.5, 0.94)}

def inst_owner(i, exact_rate, work):
    """the inst recording with the line monitor: its rate (volume / work)
    against exact's, per estimator; its effective events"""
    import json
    for e in ('owner', 'comdetective'):
        t = json.load(open(f'{W}/{i}.iown.{e}.json'))['totals']
        put(i, f'iown_{e}_rate_ratio', (t['transfers'] / max(1, work)) / exact_rate if exact_rate else float('nan'))
        if e == 'owner':
            put(i, 'iown_owner_neff', t['transfers'] ** 2 / t['variance'] if t['variance'] else 0.0)
            put(i, 'iown_owner_false_frac', t['false'] / t['transfers'] if t['transfers'] else float('nan'))
            if i in SPLIT_RANGE and t['true_share_90']:
                # how far the false share lies outside what exact's can be
                # in any execution (tests/accuracy.sh), in standard errors
                # (from its 90% interval: half its width / 1.645)
                lo, hi = SPLIT_RANGE[i]
                f = t['false'] / t['transfers']
                sd = max((t['true_share_90'][1] - t['true_share_90'][0]) / (2 * 1.645), 1e-9)
                put(i, 'iown_owner_false_z', (f - min(max(f, lo), hi)) / sd)

def full_owner(i):
    """the monitor's estimate on the full trace against exact on it
    (without synchronization's accesses): one execution"""
    import json
    x = json.load(open(f'{W}/{i}.exact.exclude.json'))['totals']
    t = json.load(open(f'{W}/{i}.fown.json'))['totals']
    put(i, 'exact_nosync_volume', x['transfers'])
    put(i, 'exact_nosync_false_frac', x['false'] / x['transfers'] if x['transfers'] else 0.0)
    put(i, 'fown_ratio', t['transfers'] / x['transfers'] if x['transfers'] else float('nan'))
    put(i, 'fown_neff', t['transfers'] ** 2 / t['variance'] if t['variance'] else 0.0)
    put(i, 'fown_false_frac', t['false'] / t['transfers'] if t['transfers'] else float('nan'))
    ci = t['transfers_90']
    put(i, 'fown_covered', int(bool(ci) and ci[0] <= x['transfers'] <= ci[1]))

if not full_only:
    for i in ids + kids:
        full_owner(i)
    for i in ids:
        _, counts, _ = bench_out(f'{W}/{i}.full.out')
        _, c2, _ = bench_out(f'{W}/{i}.iown.out')
        ex = matrix(f'{W}/{i}.full.exact.all.csv', bench_out(f'{W}/{i}.full.out')[0])
        inst_owner(i, sum(ex.values()) / max(1, shared_accesses(counts)), shared_accesses(c2))
    for i in kids:
        import json
        t = json.load(open(f'{W}/{i}.exact.exclude.json'))['totals']
        inst_owner(i, t['transfers'], 1)
    for i in ids:
        tids, _, _ = bench_out(f'{W}/{i}.full.out')
        ex = matrix(f'{W}/{i}.full.exact.all.csv', tids)
        exf = matrix(f'{W}/{i}.full.exact.false.csv', tids)
        tot = sum(ex.values())
        estimator_runs(i, tot, sum(exf.values()) / tot if tot else 0.0, [e[0] for e in ests])
    for i in kids:
        import json
        t = json.load(open(f'{W}/{i}.exact.include.json'))['totals']
        tot = t['transfers']
        put(i, 'exact_volume', tot)
        put(i, 'exact_false_frac', t['false'] / tot if tot else 0.0)
        estimator_runs(i, tot, t['false'] / tot if tot else 0.0, kests)

for i, name, v in out:
    print(f'{i}\t{name}\t{v:.6g}' if isinstance(v, float) else f'{i}\t{name}\t{v}')
EOF
python3 "$W/acc.py" "$ROOT/tests/kernels" "$W" "$FULL_ONLY" "$SEEDS" "$(IFS=,; echo "${ESTS[*]}")" \
	"$(IFS=,; echo "${kids[*]}")" "$KESTS" "${ids[@]}" >"$W/acc.tsv"
[ -z "$TSV" ] || cp "$W/acc.tsv" "$TSV"

# ---- the document ------------------------------------------------------------
get() { awk -F'\t' -v i="$1" -v m="$2" '$1 == i && $2 == m { print $3 }' "$W/acc.tsv"; }
f2() { python3 -c "import sys; v=float(sys.argv[1]); print('%.2f' % v)" "$1"; }
# p1 V [FALLBACK]: V (else FALLBACK, when V is empty) as a percentage
p1() { python3 -c "import sys; v=float(sys.argv[1]); print('%.1f' % (100 * v))" "${1:-$2}"; }
pct() { python3 -c "import sys; v=float(sys.argv[1]); print('%+.0f%%' % (100 * (v - 1)))" "$1"; }

table() {
	echo "| benchmark | threads | exact: transfers | emulate: volume error | emulate: r / shape / top-k | inst -c $IPERIOD: rate error | inst: r / shape / top-k | soft: r / shape / top-k |"
	echo "|---|---|---|---|---|---|---|---|"
	local i
	for i in "${ids[@]}"; do
		printf '| %s | %s | %s | %s | %s / %s / %s | %s | %s / %s / %s | %s / %s / %s |\n' \
			"$i" "$(get "$i" threads)" "$(printf '%.0f' "$(get "$i" exact_volume)")" \
			"$(pct "$(get "$i" emulate_ratio)")" \
			"$(f2 "$(get "$i" emulate_pearson)")" "$(f2 "$(get "$i" emulate_shape)")" "$(f2 "$(get "$i" emulate_topk)")" \
			"$(pct "$(get "$i" inst_rate_ratio)")" \
			"$(f2 "$(get "$i" inst_pearson)")" "$(f2 "$(get "$i" inst_shape)")" "$(f2 "$(get "$i" inst_topk)")" \
			"$(f2 "$(get "$i" soft_pearson)")" "$(f2 "$(get "$i" soft_shape)")" "$(f2 "$(get "$i" soft_topk)")"
	done
	echo
	echo "False sharing, percent of the volume:"
	echo
	echo "| benchmark | exact | emulate | inst | soft |"
	echo "|---|---|---|---|---|"
	for i in "${ids[@]}"; do
		case $i in false_sharing*) ;; *) continue ;; esac
		printf '| %s | %s | %s | %s | %s |\n' "$i" "$(p1 "$(get "$i" exact_false_frac)")" \
			"$(p1 "$(get "$i" emulate_false_frac)")" "$(p1 "$(get "$i" inst_false_frac)")" \
			"$(p1 "$(get "$i" soft_false_frac)")"
	done
}

# the estimators' table: one row per benchmark and estimator run
est_table() {
	echo "| benchmark | exact: transfers / false | estimator | period | volume / exact: min-max (mean) | within 15% | false share within 0.05 | exact in the 90% interval | issue 13's target met |"
	echo "|---|---|---|---|---|---|---|---|---|"
	local i e
	for i in "${ids[@]}" "${kids[@]}"; do
		for e in "${ESTS[@]}"; do
			read -r name en ep ej <<<"$e"
			[ -n "$(get "$i" "${name}_runs")" ] || continue   # (the kernels: KESTS)
			[ "$en" = owner ] && en="owner, J = $([ "$ej" = default ] && echo "64 N" || echo "$ej")"
			local met
			met=$(python3 -c "import sys; a, b, c, n = map(int, sys.argv[1:]); print('yes' if a >= $n9 and b >= $n9 and c >= $n8 else 'no')" \
				"$(get "$i" ${name}_within15)" "$(get "$i" ${name}_false_within05)" "$(get "$i" ${name}_covered)" "$SEEDS")
			printf '| %s | %s / %s%% | %s | %s | %s-%s (%s) | %s/%s | %s/%s | %s/%s | %s |\n' \
				"$i" "$(printf '%.0f' "$(get "$i" exact_volume)")" "$(p1 "$(get "$i" exact_false_frac)")" \
				"$en" "$ep" "$(f2 "$(get "$i" ${name}_ratio_min)")" "$(f2 "$(get "$i" ${name}_ratio_max)")" \
				"$(f2 "$(get "$i" ${name}_ratio_mean)")" "$(get "$i" ${name}_within15)" "$SEEDS" \
				"$(get "$i" ${name}_false_within05)" "$SEEDS" "$(get "$i" ${name}_covered)" "$SEEDS" "$met"
		done
	done
}

# "A to B": the fewest and most owned transfers a run sees on average
# (exact's volume / EPERIOD) over the benchmarks
owned_range() {
	local i
	for i in "${ids[@]}"; do get "$i" exact_volume; done |
		python3 -c "import sys; v=[float(x) / $EPERIOD for x in sys.stdin]; print('%.0f to %.0f' % (min(v), max(v)))"
}

# "k of n": benchmarks (MET_IDS) where estimator run NAME's METRIC >= MIN
met() {
	local n=0 k=0 i v
	for i in "${MET_IDS[@]}"; do
		n=$((n + 1))
		v=$(get "$i" "$1_$2")
		[ "${v:-0}" -ge "$3" ] && k=$((k + 1))
	done
	echo "$k of $n"
}

# the issue's thresholds out of SEEDS runs: 9 and 8 of 10
n9=$(( (SEEDS * 9 + 9) / 10 )) n8=$(( (SEEDS * 8 + 9) / 10 ))
if [ $FULL_ONLY = 1 ]; then
	echo "(full recordings and analysis $((t_end - t_start)) s; metrics: ${TSV:-not kept (--tsv)})"
	exit 0
fi
if [ -z "$OUT" ]; then
	table
	echo
	est_table
	echo
	echo "(recording and analysis $((t_end - t_start)) s; work directory: ${KEEP:-removed})"
	exit 0
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
	cat <<EOF
# Accuracy of the models on the microbenchmarks and kernels

Generated by \`make accuracy\` (\`scripts/accuracy.sh -o doc/accuracy.md\`; do not edit by hand;
\`tests/accuracy.sh\` asserts bounds on the same measurements).

- **Machine:** ${cpu:-unknown cpu}, $(nproc) online cpus, Linux $(uname -r), $(${CC} --version | head -n 1).
  A virtual machine **without a PMU**: the \`pebs\` and \`ibs\` samplers
  cannot run here, so **their accuracy is not measured**. Measured are
  the \`inst\` sampler (compiler instrumentation: exact addresses, no
  skid) and the \`soft\` sampler (timer samples, addresses reconstructed).
- **Watchpoints** (commrec's probe): $("$COMMREC" --list-samplers 2>/dev/null | sed -n 's/): .*/)/; s/^watchpoints: //p').
  Where they do not fire, the inst and soft recordings have none (commrec
  does not arm them), so their comdetective figures come from samples alone.
- **Date:** $(date -u '+%Y-%m-%d %H:%M UTC'), commtrace $(cat "$ROOT/VERSION" 2>/dev/null || echo '?')$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null | sed 's/^/, commit /') (plus uncommitted changes, if any).
- **Run time:** $((t_end - t_start)) s of building, recording and analysis.
- **One run**: every number below comes from one recording each; the spread
  over repeated runs is stated after the table (the estimators' table:
  $SEEDS analyses of each full trace).

## What is compared

The ground truth is the \`exact\` model (an idealized coherence protocol,
\`commanalyze(1)\` MODELS) on a full trace (\`commrec --sampler inst --full\`:
every load and store; $NFULL iterations per thread, seed 1). Against it:

- **emulate**: ComDetective emulated on *that same* full trace at the
  default \`--emulate-period\` (every 10000th load and store of each
  thread, ideal debug registers). Same execution, so the volumes compare:
  *volume error* = emulate volume / exact volume - 1.
- **inst -c $IPERIOD**: a recording with the inst sampler (every
  ${IPERIOD}th load and every ${IPERIOD}th store, real debug-register
  watchpoints), $NINST iterations per thread, seed 2, analyzed with
  \`comdetective\`. Another execution: the *rate error* compares transfers
  per shared access (volume / the benchmark's own count of shared
  accesses) with exact's. It mixes the model's error with the difference
  between the executions (the instrumented program runs ~20x faster than
  the fully recorded one, so its threads interleave differently): read it
  as an order of magnitude.
- **soft**: a recording with the soft sampler (1 ms of CPU time per sample)
  of the plainly compiled benchmark, seed 3, analyzed with
  \`comdetective\`. Another execution, and weights in CPU time, not
  accesses (the report warns of it): only the pattern is compared.

Pattern metrics, on the symmetric thread matrix M + M^T (pairs i < j; the
main thread is a row of its own), threads matched by the tid each benchmark
prints (a recording numbers threads in start order, which differs between
recordings):

- *r*: the Pearson correlation of the pair cells with exact's;
- *shape*: sum |a/A - r/R| (0 best, 2 worst), the normalized matrices' L1
  distance;
- *top-k*: the share of the benchmark's k communicating pairs (p2p: 2,
  the others: 1) among the model's k heaviest pairs.

Configurations: \`write_volume -s 0.5\`, \`false_sharing -f 0.5\` and
\`-f 0.9\`, \`read_write -r 0.5\` and \`objects -k malloc -s 0.5\` with 2
threads, \`p2p -s 0.5\` with 4 (two pairs). Every benchmark thread i is
pinned to cpu i mod $(nproc) (a preloaded \`pthread_create\` wrapper), so
the two threads of a pair run on different cpus: unpinned, the scheduler
often kept both on one cpu while the full recording's writer thread used
the other, the threads took turns, and exact counted a few dozen transfers
in one run and 200000 in the next. Full recordings use
\`COMMTRACE_RING_UNITS=1048576\` (a ring that holds the whole run).

## Results

EOF
	table
	cat <<EOF

## Estimators: comdetective and owner against exact

\`--estimator\` (commanalyze(1)) decides how detected transfers are
weighted. **comdetective** (the default, ComDetective's): each detected
event weighs its sample's period. **owner**: with the window J
(\`--owner-window\`, default 64 N) a transfer of exact is stood for by
the J accesses to its line (loads and stores, by any thread) before the
access that receives it, and counts P / J (P / m on the line's first m < J
accesses) for each of them that was sampled. Its expectation is exact's
volume and true/false split whatever J when each access is sampled with
probability 1/N. Its sampler, in emulate as in the recorder, takes one
load in each block of N loads of a thread and one store in each block of
N stores, at a random place in the block: every access is sampled with
probability exactly 1/N, and the number of samples in any stretch of a
thread's run is fixed up to one, where independent draws leave it
Poisson (on one false_sharing trace, 30 seeds: 0.99-1.01 of exact's
volume against 0.91-1.11 with independent draws; write_volume 29 of 30
within 15% against 26 of 30). J = 1 is "a sampled access weighs
its period x the transfers the next access to its line receives". A large
J lets every sampled access of a line stand for the line's transfers over
its next J accesses: where threads touch a line many times between two
transfers (bursts), or communicate only in phases, the variance drops by
up to the number of accesses per transfer; where most of a line's
accesses are transfers (ping-pong) and the line has fewer than J
accesses it can double (commanalyze(1), --owner-window). Loads stand for
transfers as stores do: a line's loads are often most of its accesses (a
vector every thread reads and one writes), and the variance is at least
~ N T^2 / (the accesses to the lines that communicate), whatever the
estimator built on these samples. Under emulate it runs on a full trace
(\`--model emulate\`): the transfers after a sampled access are read from
the trace.

Each row: $SEEDS runs of \`commanalyze report --model emulate --estimator E
--emulate-period N --seed S\` (S = 1..$SEEDS: the sampler's and the
watchpoints' random draws) on the full trace of the table above (one
execution per benchmark; the spread is the sampling error alone). *within
15%*: runs whose volume is within 15% of exact's; *false share within
0.05*: runs whose false-sharing share is within 0.05 of exact's; *exact in
the 90% interval*: runs whose reported interval (\`report --format json\`,
\`totals.transfers_90\`) holds exact's volume. That interval is Fay and
Feuer's gamma interval for a weighted sum of sampled units, its upper
limit allowing for one unsampled unit of the largest weight a sampled
access can carry (1.5 P for the owner estimator: commanalyze(1), 90%
INTERVALS, has the derivation). With the interval before it (a Poisson
count of the effective events, no allowance) omp_reduce's interval held
exact's volume in 14 of 25 runs (2026-11-24, at -i 1000): 15% of its transfers are on
two lines (the OpenMP team's, the master's stack slot of the reduction)
with 12,000 and 6,000 accesses at -i 1000, sampled about once at the
period 10,000; the runs that miss them are low and report a small
variance. omp_reduce runs 4000 iterations here so that those lines hold
about 5 and 2.4 samples each at the default period (12 and 6 accesses an iteration). The realistic kernels
(tests/kernels/README.md) follow the microbenchmarks, each recorded once
full (\`commrec --sampler inst --full\`, pinned like the benchmarks) with
$(for c in "${KERNELS[@]}"; do printf '`%s`, ' "$c"; done | sed 's/, $//'),
exact's volume counting every access of the trace (the synchronization
accesses too: \`--sync include\`, the default, as the estimators see
them).

EOF
	est_table
	MET_IDS=("${ids[@]}")
	cat <<EOF

The issue's thresholds (issue 13, "Done when") under emulate at the default
period, per benchmark, $SEEDS runs each:

- volume within 15% of exact's in at least $n9 of $SEEDS runs: owner on
  $(met owner within15 "$n9") microbenchmarks, comdetective on $(met comdetective within15 "$n9");
- false share within 0.05 in at least $n9 of $SEEDS runs: owner on
  $(met owner false_within05 "$n9"), comdetective on $(met comdetective false_within05 "$n9");
- exact's volume inside the 90% interval in at least $n8 of $SEEDS runs: owner on
  $(met owner covered "$n8"), comdetective on $(met comdetective covered "$n8");
- the owner estimator with J = 1: volume $(met owner_j1 within15 "$n9"),
  false share $(met owner_j1 false_within05 "$n9"), coverage $(met owner_j1 covered "$n8");
- at a tenth of the period (N = $((EPERIOD / 10))), owner: volume $(met owner_fine within15 "$n9"),
  false share $(met owner_fine false_within05 "$n9"), coverage $(met owner_fine covered "$n8").
EOF
	MET_IDS=("${kids[@]}")
	[ ${#kids[@]} -eq 0 ] || cat <<EOF
- the kernels: owner volume $(met owner within15 "$n9"), false share
  $(met owner false_within05 "$n9"), coverage $(met owner covered "$n8");
  comdetective volume $(met comdetective within15 "$n9"), false share
  $(met comdetective false_within05 "$n9"), coverage $(met comdetective covered "$n8").
EOF
	cat <<EOF

How to read it: the owner estimator's error is sampling error only, and
its size follows from the number of events behind it (the report prints
it: *effective events*, transfers^2 / variance). With J = 1 a run sees on
average exact's transfers / N sampled accesses that stand for one
($(owned_range) at N = $EPERIOD on the microbenchmarks), and its relative
standard error is about 1/sqrt of that. "Within 15% in 9 of 10 runs"
needs about (1.645 / 0.15)^2 = 120 effective events. The window J raises
them where a line's transfers are separated by bursts of accesses, but
not beyond the number of sampled accesses that fall where the line is
being communicated on: the estimate is a sum over the sampled accesses,
so its variance is at least that of sampling, 1 in N, the accesses near
the transfers. When the threads communicate only in part of the run (on
a loaded machine they seldom run at the same time), that is few samples
at N = $EPERIOD, whatever the estimator built on these samples; the
threshold is then a matter of run length and period (the kernels' sizes
above are chosen for it), and the interval says how far off a run can
be. ComDetective's weighting is biased besides: its errors do not shrink
with more samples, and its intervals, which count only the sampling
error, miss exact's value.

## The owner estimator under --sampler inst (the line monitor)

An inst-sampled recording does not hold the accesses after a sample: the
inst runtime's line monitor (\`commrec --owner-window J\`,
record/inst/inst_owner.c) follows the line of each sampled store for its
next 2J stores by any thread, plays the exact model's coherence state of
that line on every access to it, and writes each transfer it sees in the
last J (format version 4, OWNER_XFER). \`commanalyze --estimator owner\`
weighs each at windows x P / J (commanalyze(1)). The store countdown
takes one store in each block of N, at a random place (every store
sampled with probability 1/N), and a transfer counts for every window among the J stores before
its last J: unbiased where the line had at least 2J stores before the
transfer, low on a line's first 2J stores. A sampled store whose window
the monitor could not open (its 256-line table slot held by another
line's window, or its line with 64 windows open) is weighed for by the
opened ones: P / q for P, q the share of the sampled stores so far whose
window opened (inverse-probability weighting, assuming a missed window
would have seen what an opened one saw). Where many are missed this
decides the volume: LULESH 2.0 (\`-s 20 -i 50\`, 4 threads, default
\`commrec --sampler inst -c 1000\`, 5 recordings, 98% missed, 2026-11-24)
0.84-1.05 x exact's 2.23 million with it, 0.018-0.023 x without; the
tests' kernels at their default sizes 0.72-1.17 x with it, 0.45-0.99 x
without (commanalyze(1), --estimator owner). The first J stores (the lag)
are for the true/false split: the monitor learns the writer's bytes from
the sampled store on, so it knows them whenever it saw the writer's tenure
begin, which the lag makes so for every tenure that began at most J stores
before its transfer. Without the lag a window's first transfer came from
a tenure it had not seen begin and read false where the writer had stored
the receiver's bytes before the sampled store: tests/inst/relay.c (two
threads taking turns on a line, every transfer true sharing, \`--full=all
--owner-window 16 -c 200\`, one execution, 2026-11-24): 19.6% false, with
the lag 0% (test owner/split); the pipeline kernel at the table's
settings: 11.0% false against exact's 0.0%, with the lag 0%. The volume
does not move with the lag: owner / exact on one execution of
false_sharing (2M iterations, \`-c 1000\`, 140-660 effective events, load
12-13, 4 runs each, interleaved) was 0.95-1.09 without the lag and
0.99-1.10 with it at f=0.9, 1.21-1.33 and 1.17-1.26 at f=0.5 (there the
observer effect, below).

### One execution: the monitor against exact on the same trace

The full recordings above ran with the monitor too (\`commrec --full=all
--owner-window $OWNJ -c $IPERIOD\`): each trace holds every access and the
monitor's records of the same execution. *owner / exact*: the estimate
over exact's volume without the accesses that synchronization calls imply
(\`--sync exclude\`: the runtime emulates those for the full trace only, the
monitor does not see them); *in 90%*: exact's volume inside the reported
interval. Issue 13's target: within 30%. One recording per row, so each
row is one draw of the monitor's sampling.

EOF
	echo "| benchmark | exact: transfers (no sync) | owner / exact | within 30% | exact in 90% interval | effective events | owner: false share (exact) |"
	echo "|---|---|---|---|---|---|---|"
	for i in "${ids[@]}" "${kids[@]}"; do
		printf '| %s | %.0f | %s | %s | %s | %.0f | %s%% (%s%%) |\n' "$i" \
			"$(get "$i" exact_nosync_volume)" "$(f2 "$(get "$i" fown_ratio)")" \
			"$(python3 -c "import sys; print('yes' if abs(float(sys.argv[1]) - 1) <= 0.3 else 'no')" "$(get "$i" fown_ratio)")" \
			"$([ "$(get "$i" fown_covered)" = 1 ] && echo yes || echo no)" \
			"$(get "$i" fown_neff)" "$(p1 "$(get "$i" fown_false_frac)")" \
			"$(p1 "$(get "$i" exact_nosync_false_frac)")"
	done
	cat <<EOF

Where it misses, the cause measured on false_sharing (\`commrec --full=all
--owner-window 64 -c 1000\`, 1M iterations, one trace, 2026-11-24): the
monitor's records are exact's transfers in its windows (4244 and 2193
records against 4246 and 2169 of exact's in the same windows, two runs,
replayed from the traces), but inside windows the line changes writer
more often per store than elsewhere: 1.45-1.58x, 1.47-1.53x, 1.57-1.67x
and 1.55-1.62x the trace's mean at 1, 2-4, 5-16 and 17-64 stores after a
sampled store, 1.08-1.14x at 65-256, 1.09x beyond. The monitor takes a
lock on every access to a monitored line: two threads that both hammer
the line then alternate at every access, where unmonitored one keeps the
line for a burst. The estimate is right about what it sees; the program
communicates more while it is seen. It is not the lock's hand-over alone:
a monitor that ordered the accesses without a lock (one fetch-add on the
line's sequence, an entry in the slot's log, the model applied in that
order by whichever thread found the applier free, the access not waiting
for its outcome; commit ac5275a, reverted) measured no better, 1.28,
1.49, 1.66 and 1.74 against the lock's 1.40, 1.42, 1.46 and 1.53 (writer
changes per store inside / outside the windows, false_sharing -f 0.5,
1M iterations, \`-c 1000\`, load 11-17, 2026-11-24; p2p: 1.41 against
1.22). Any per-access bookkeeping that the line's threads share (a lock,
a sequence, a log) couples them; what would not is a monitor that writes
each access to its own thread's buffer and leaves the order and the model
to the analysis.

### Another execution: transfers per shared access

Each row: one recording \`commrec --sampler inst -c $IPERIOD --owner-window
$OWNJ\` ($NINST iterations per thread, seed 2; the kernels with the
arguments of their full recording), analyzed with \`--estimator owner\`
and with \`--estimator comdetective\` (the same samples and software
watchpoints). Another execution than the full one: *rate / exact* =
(transfers per shared access) / exact's (the kernels: transfers per run,
the same work, against exact without the accesses that synchronization
calls imply, \`--sync exclude\`: the runtime emulates those only in full
mode, so the monitor does not see them); it holds the difference between
the executions besides
the estimator's error (the threads interleave differently: the
instrumented program runs ~20x faster than the fully recorded one).
Issue 13's target: within 30%.

EOF
	echo "| benchmark | owner: rate / exact | within 30% | owner: effective events | owner: false share (exact) | comdetective: rate / exact |"
	echo "|---|---|---|---|---|---|"
	for i in "${ids[@]}" "${kids[@]}"; do
		printf '| %s | %s | %s | %.0f | %s%% (%s%%) | %s |\n' "$i" \
			"$(f2 "$(get "$i" iown_owner_rate_ratio)")" \
			"$(python3 -c "import sys; print('yes' if abs(float(sys.argv[1]) - 1) <= 0.3 else 'no')" "$(get "$i" iown_owner_rate_ratio)")" \
			"$(get "$i" iown_owner_neff)" "$(p1 "$(get "$i" iown_owner_false_frac)")" \
			"$(p1 "$(get "$i" exact_nosync_false_frac)" "$(get "$i" exact_false_frac)")" \
			"$(f2 "$(get "$i" iown_comdetective_rate_ratio)")"
	done
	cat <<EOF

### How much the executions differ

Issue 13 compares the inst recording with exact across executions: within
30% of exact's transfers per shared access in 9 runs of 10. How far apart
are two executions of one configuration? \`scripts/accuracy.sh --spread 5\`
(2026-11-24, commit 67a6df1, load 11-13 on the 2 cpus: four other builds
and test suites): five rounds, each a full recording (seed r, with the
line monitor) and an inst recording with the line monitor (seed 100 + r)
of every microbenchmark, interleaved. *exact*: exact's transfers per
shared access of each full recording; *inst, owner*: the owner estimate's
of each inst recording; *one execution*: the monitor's estimate on the
full trace over exact's on the same trace (\`--sync exclude\`).

| benchmark | runs | exact: transfers per shared access, min-max (max/min) | exact's runs within 30% of its median | inst, owner: per shared access, min-max | inst runs inside exact's range | inst runs within 30% of exact's median | one execution: owner / exact, min-max | within 30% |
|---|---|---|---|---|---|---|---|---|
| write_volume | 5 | 0.0103-0.0239 (2.3) | 2/5 | 0.0060-0.0184 | 2/5 | 2/5 | 0.66-1.79 | 3/5 |
| false_sharing | 5 | 0.0006-0.0243 (41.5) | 3/5 | 0.0026-0.0166 | 5/5 | 1/5 | 0.43-1.51 | 1/5 |
| false_sharing_f0.9 | 5 | 0.0052-0.0262 (5.1) | 2/5 | 0.0016-0.0287 | 3/5 | 3/5 | 1.44-2.04 | 0/5 |
| read_write | 5 | 0.0039-0.0125 (3.2) | 2/5 | 0.0005-0.0201 | 3/5 | 2/5 | 1.06-1.82 | 3/5 |
| p2p | 5 | 0.0069-0.0266 (3.9) | 3/5 | 0.0004-0.0324 | 2/5 | 1/5 | 0.57-1.50 | 2/5 |
| objects | 5 | 0.0076-0.0403 (5.3) | 2/5 | 0.0000-0.0370 | 4/5 | 2/5 | 0.87-1.49 | 3/5 |

Exact's own rate differs by 2.3x to 41x between executions of one
configuration, and only 2 or 3 of its 5 runs lie within 30% of its own
median: an estimator that were exact on its own execution would meet "within
30% of exact's rate in 9 runs of 10" no more often than that. On this
machine, at this load, the criterion across executions is decided by
exact's spread between executions, not by the estimator. (An earlier
round, 6 runs of each with the monitor before the lag, load 9-13: exact's
rate differed 2.5x to 49x, 2 to 5 of 6 runs within 30% of its median, and
the inst estimate lay inside exact's range in 2 to 4 of 6.) The inst
estimates spread as widely as exact's and mostly within its range; the
instrumented program runs ~20x faster than the fully recorded one, so its
threads interleave differently again (the benchmarks' threads are pinned
to the two cpus, but at load 11-13 they seldom run at the same time). On
one execution the comparison is free of that, but not of the monitor's
observer effect (above) and its sampling error (1 to 43 effective events
per run at the default period): the estimate was within 30% of exact in
0 to 3 of 5 runs per benchmark at this load, mostly high.

### The owner estimate on alltoall and on third-party programs

Measured 2026-11-25 (phase 10, load 4-14 on the 2 cpus, 4 threads,
\`commrec --sampler inst\` defaults: \`--owner-window 32\`, \`-c 1000\`; *one
execution*: \`commrec --sampler inst --full=all --owner-window 32 -c 1000\`,
exact with \`--sync exclude\` against the monitor's estimate on the same
trace; *lag*: the lag test of \`commanalyze(1)\`, \`--estimator owner\`).

**alltoall** (\`-t 4 -k 16384 -r 50\`, 7 runs, and the default \`-k 65536\`, 2
runs; one execution each, and 3 more in the table's round below): owner /
exact 0.958-1.002, exact inside the 90% interval in 12 of 12; at 18% (49% at \`-k 65536\`) of the sampled stores
finding the table full. Replaying exact over three of the traces, the
expectation of the estimate is 0.972-0.985 of exact's transfers (those with
fewer than 2J stores to their line before them count less), and the windows
the table missed would have held 0.85-0.96 times what the opened ones held
per window (the q weighing overcounts by the difference). Another execution
(default inst recordings) lies 0.83-1.03 of exact's on a full recording,
because alltoall's transfers differ between executions: exact found 189k
to 225k on ten full recordings of the same arguments. The difference is
in one part: stores that receive a line another worker stored (two workers
scattering keys into one destination line at once), false sharing whose
count follows how the workers interleave: 104k-131k on three full
recordings, the estimate's 96k-102k on three inst ones; loads, and stores
that receive true sharing, agree within 15% (the loads' split leans a little
to false: 27-28k false against exact's 25-26k). So the 10-15% shortfall of
phase 9's table was the executions' difference, not the estimator's.

**SPLASH-3** (built outside the project, \`-p4\`; 3 runs of each, one
execution and one default inst recording compared with the first run's
exact):

| program | exact: transfers, true | one execution: owner / exact | inside 90% | lag test warned | lags weighed / exact | inst default: owner / exact | true share (owner) |
|---|---|---|---|---|---|---|---|
| radix \`-n262144\` | 104k, 93.6% | 0.000-0.004 | 0/3 | 3/3 (and 3/3 inst) | 0.45-0.77 | 0.000-0.001 | (0-3 events) |
| fft \`-m16\` | 58.6k, 100% | 0.20-0.24 | 3/3 (interval to 1.3-1.4) | 3/3 (and 3/3 inst) | 0.83-0.93 | 0.23-0.27 | 100% |
| lu \`-n256\` | 21.8k, 100% | 0.54-0.79 | 3/3 | 0/3 | 0.68-0.75 | 0.60-0.65 | 91-97% |
| ocean \`-n130\` | 90.2k, 98.3% | 0.41-0.57 | 3/3 | 0/3 | 0.44-0.67 | 0.42-0.48 | 92-100% |

Why, from exact replayed over one trace of each (every transfer's n, the
stores to its line before it, and what every sampled store's window would
have held):

- *Lines stored fewer than 2J times before their transfers.* radix's lines
  have 16-47 stores in all, its transfers 8-24 before them: the expectation
  of the estimate is 0.002 of exact's (0.32 with windows that held the
  transfers of their lag too, 0.98 with J = 8 and no lag). fft: 0.42, lu:
  0.68, ocean: 0.74.
- *Missed windows unlike the opened ones.* 64-88% of the sampled stores
  found the table full (windows on lines no longer stored stay open: they
  close at the line's 2Jth store); the missed ones would have held 1.8x
  (fft), 1.06x (lu) and 0.47x (ocean, radix 0.6x) what the opened ones held
  per window, against the weighing's assumption (equal). On ocean the run's
  q would give 1.40x exact, the running q (the estimate's) 0.57x; neither
  is right. It happens on the kernels too, where the lines are few: on one
  of two one-execution runs of the stencil (`-t 4 -c 130 -s 60000`) only
  2.8% of the sampled stores were missed, but all on one of its
  communicating lines, whose table slot another line's window held for the
  whole run (that window's line was no longer stored, so it never closed):
  they would have held 8.0 transfers per window against the opened ones'
  1.26, and the estimate was 0.84x exact's, outside its interval (0.96x
  with every window opened; the other run 0.97x). Where the slots collide
  follows the addresses, so it changes from run to run.
- A smaller J (one run each) counts more of the short lines' transfers, but the lag then
  no longer sees long tenures begin: radix at J = 4 gave 1.10x exact's
  volume and 37% true sharing (exact 94%), at J = 8 0.72x and 97%; fft at
  J = 4 1.15x and 23% true (exact 100%), at J = 8 0.36x; lu at J = 4 0.96x
  and 14% true (exact 100%); ocean at J = 8 0.74x and 99% true (exact 98%),
  at J = 4 0.75x and 78%. No J gives both on these programs.

No weighting of the recorded windows removes the first cause: a window sees
only what follows its sampled store, so an estimate that sums what the
windows saw, with exact's expectation whatever the lines' history, must give
each transfer wholly to the last store before it (J = 1, \`commanalyze(1)\`).
The lag test makes the first cause visible (radix and fft: every run
warned, the kernels and LULESH never); the second is not detected.

**LULESH 2.0** (\`-s 20 -i 50\`, \`OMP_NUM_THREADS=4\`, 5 default inst
recordings against exact's 2.23M on a full recording): 0.84-0.94x exact's
volume, exact inside the 90% interval in 5 of 5, true sharing 78-83%
(exact 84%), 98% of the sampled stores missed, not warned (held 1209-1480,
lags 1353-1591).

## How to read it

- **exact** matches what the benchmarks' own counts predict (asserted by
  tests/accuracy.sh; what holds for every schedule also by
  tests/e2e/exact_invariants.sh in make check): all but a few dozen startup transfers (the
  runner's per-thread structs) in the cells the benchmark communicates in;
  none between p2p's pairs or into read_write's writer; on lines that are
  only written, the two directions of a pair differ by at most one per
  line; false_sharing's false share is 50% at f=0.5 (the two lines are
  exchangeable whatever the schedule) and between 85% and 93% at f=0.9
  (random interleaving would give 90%, strict alternation 94%).
- **emulate** at the default period (the comdetective estimator): over 11
  repeated runs of the 6 configurations on a quiet machine (2026-11-21)
  the volume error ranged from -49% to +109% (false_sharing at f=0.9
  tends low, read_write spreads widest). On a loaded machine the threads interleave coarsely, each
  touches a line many times between transfers, and the error grows
  (+362% to +2105% in the run of 2026-11-23, 23:10 UTC, with five other
  builds and test suites on the 2 cpus); the owner estimator's is sampling
  error only (the estimators' table). Being biased, its volume is not
  asserted (no bound follows from the counts for it); its pattern is. At 1M iterations per thread (a
  quarter of the samples) it reached +245%. It finds p2p's pairs and
  nothing between them in every run.
- **inst** and **soft** put all of their volume in the right cells in every
  run (the test asserts >= 99%). With two benchmark threads nearly all of
  exact's volume is in the one pair of workers, so *r* is close to 1 for
  any detector that puts its volume there (and not on the main thread):
  for those rows it says only that. p2p is the structured case: *r* over
  repeated runs was 0.77-1.00 (inst) and 0.99-1.00 (soft; 0.57-1.00 with
  runs half as long); the low values come from how long each pair's
  threads ran together, which differs between executions (four threads on
  two cpus).
- The rate errors of inst and soft are not accuracy figures (other
  executions; soft weights are CPU time). soft's false share was 32-75% at
  f=0.5 and 51-89% at f=0.9 over repeated runs: too few samples (and
  CPU-time weights) for a stable split; inst's was 41-51% and 81-93%
  on a quiet machine (2026-11-21). On a loaded one (load 5-13,
  2026-11-24) inst's comdetective split at f=0.9 was 37-80% over 10
  recordings, below the bound of 70% that tests/accuracy.sh had for it in
  6 (h13b's runs: 59% and 35%). Not the recording: on 6 of them, made
  with the line monitor too, comdetective said 38-71% (90% intervals
  33-47% and 40-51% in two) where the owner estimator said 87-93% on the
  same records; exact's split of false_sharing at f=0.9 is at least 50% in
  any execution (coarse interleaving) and at most 94% (strict
  alternation), so comdetective's split was outside what the execution
  could have had. It is the comdetective estimator: each detection
  stands for its sample's period whatever the transfers its line had, so
  its split is that of the detections, and the two lines' transfers were
  detected at different rates (the issue: not exact's in expectation). No
  bound follows for it from the counts; the one it had was fitted to a
  quiet machine. The
  test now asserts the owner estimator's split on the monitored
  recording, within 50-94% up to 4.42 of its standard errors, and prints
  comdetective's.
EOF
} >"$OUT"
echo "accuracy.sh: wrote $OUT ($((t_end - t_start)) s)" >&2
