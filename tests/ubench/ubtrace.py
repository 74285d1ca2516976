#!/usr/bin/env python3
"""Checks of a recorded microbenchmark, for tests/e2e/*.sh.

Reads what a microbenchmark printed (the line format of tests/ubench/README.md)
and what `commanalyze dump --raw` / `commanalyze matrix --format csv` printed, and
prints one test line per check, as tests/run.sh wants them:
    PASS name        FAIL name: why        SKIP name: why
Exit status: 1 if any FAIL was printed, else 0.

Thread indices: benchmark thread i is the i-th thread the benchmark's main
thread creates; the recorder numbers threads in creation order with the main
thread 0, so benchmark thread i is trace thread i + OFFSET (--offset, default
1).  With --info FILE (the output of `commanalyze info`), the per-thread table
there (rows "INDEX TID PARENT ...") maps each benchmark thread by its tid
(the benchmark prints it in its thread_info lines) instead.

Commands (NAME prefixes every test name):
  samples NAME BENCH_OUT DUMP [--min-frac F]
      DUMP: `commanalyze dump --raw TRACE --type sample`.  Checks, per benchmark
      thread: it has samples (NAME/samples); >= 1 sample with an address in
      one of its own objects, private and shared (NAME/own-objects); of the
      samples whose address lands in any printed object, at least F (0.8)
      land in an object of the sampling thread (NAME/attribution); of those,
      at least F have the access kind the benchmark's counts allow
      (NAME/kinds).
  threads NAME BENCH_OUT DUMP
      DUMP: `commanalyze dump --raw TRACE --type thread_start`: every benchmark
      thread (and the main thread) has a thread_start record.
  wphit NAME BENCH_OUT DUMP
      DUMP: `commanalyze dump --raw TRACE` (wp_arm and wp_hit records at least):
      some wp_arm exists (NAME/wp-arm) and some wp_hit address lies in a
      shared object (NAME/wp-hit).
  alloc NAME BENCH_OUT DUMP
      DUMP: `commanalyze dump --raw TRACE --type alloc` and `--type free`
      concatenated: an alloc record with the shared object's address, size
      and kind (and old= for realloc) (NAME/alloc), and a free of it
      (NAME/free).
  matrix-total CSV
      prints the sum of all cells of a matrix (no test line).
  p2p NAME CSV NTHREADS [--ratio R] [--bench BENCH_OUT]
      pair cells (2p, 2p+1) (benchmark indices) are > 0 and each is more
      than R (3) times every cell between threads of different pairs
      (NAME/pairs).
"""
import argparse
import re
import sys

failed = False


def out(kind, name, why=""):
    global failed
    if kind == "FAIL":
        failed = True
    print(f"{kind} {name}" + (f": {why}" if why else ""))
    sys.stdout.flush()


class Obj:
    def __init__(self, name, lo, hi, kind, threads, extra):
        self.name, self.lo, self.hi, self.kind = name, lo, hi, kind
        self.threads = threads
        self.extra = extra

    def has(self, addr):
        return self.lo <= addr < self.hi

    @property
    def shared(self):
        return self.name.startswith("shared")


def parse_kv(tokens):
    kv = {}
    for t in tokens:
        if "=" in t:
            k, v = t.split("=", 1)
            kv[k] = v
    return kv


class Bench:
    """What a microbenchmark printed."""

    def __init__(self, path):
        self.objects = []
        self.counts = {}      # thread -> {key: int}
        self.tids = {}
        self.header = {}
        with open(path, errors="replace") as f:
            for line in f:
                tok = line.split()
                if not tok:
                    continue
                if tok[0] == "bench":
                    self.header = parse_kv(tok[2:])
                    self.header["name"] = tok[1]
                elif tok[0] == "object" and len(tok) >= 3:
                    lo, hi = tok[2].split("-")
                    kv = parse_kv(tok[3:])
                    threads = {int(x) for x in kv.get("threads", "").split(",") if x}
                    self.objects.append(Obj(tok[1], int(lo, 16), int(hi, 16),
                                            kv.get("kind", ""), threads, kv))
                elif tok[0] == "thread" and len(tok) >= 2:
                    self.counts[int(tok[1])] = {k: int(v) for k, v in parse_kv(tok[2:]).items()}
                elif tok[0] == "thread_info" and len(tok) >= 2:
                    self.tids[int(tok[1])] = int(parse_kv(tok[2:]).get("tid", "0"))
        self.nthreads = len(self.counts)

    def object_at(self, addr):
        for o in self.objects:
            if o.has(addr):
                return o
        return None

    def allowed_kinds(self, thread, obj):
        """Access kinds the benchmark's counts allow for thread on obj."""
        c = self.counts.get(thread, {})
        if obj.shared:
            pairs = (("store", "shared_stores"), ("load", "shared_loads"),
                     ("atomic", "shared_atomics"))
        else:
            pairs = (("store", "private_stores"), ("load", "private_loads"))
        return {k for k, key in pairs if c.get(key, 0) > 0}


REC = re.compile(r"^(\d+) T(\d+) (\w+)(.*)$")


TMAP = None  # benchmark thread -> trace index, from --info; None: offset


def load_info(path, bench):
    """Map benchmark threads to trace indices through the tids in the
    per-thread table of `commanalyze info`."""
    by_tid = {}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"^\s*T?(\d+)\s+(\d+)\s+(-|T?\d+)\s", line)
                if m:
                    by_tid[int(m.group(2))] = int(m.group(1))
    except OSError:
        return None
    tmap = {}
    for i, tid in bench.tids.items():
        if tid in by_tid:
            tmap[i] = by_tid[tid]
    return tmap if len(tmap) == bench.nthreads and bench.nthreads else None


def trace_index(a, i):
    return TMAP[i] if TMAP is not None else i + a.offset


def records(path, types=None):
    with open(path, errors="replace") as f:
        for line in f:
            m = REC.match(line.strip())
            if not m:
                continue
            if types and m.group(3) not in types:
                continue
            yield int(m.group(1)), int(m.group(2)), m.group(3), parse_kv(m.group(4).split())


def hexint(s):
    try:
        return int(s, 16) if s.lower().startswith("0x") else int(s)
    except (ValueError, AttributeError):
        return None


def bench(a, quiet=False):
    global TMAP
    b = Bench(a.bench_out)
    if getattr(a, "info", None):
        TMAP = load_info(a.info, b)
        if quiet:
            pass
        elif TMAP is None:
            print(f"# {a.name}: benchmark tids not found in {a.info}: "
                  f"benchmark thread i taken as trace thread i+{a.offset}")
        elif any(TMAP[i] != i + a.offset for i in TMAP):
            print(f"# {a.name}: trace indices by tid: {TMAP}")
    return b


def cmd_samples(a):
    b = bench(a)
    n = b.nthreads
    rev = {trace_index(a, i): i for i in range(n)}
    per = {i: {"all": 0, "own": 0, "own_shared": 0, "own_private": 0, "in_obj": 0,
               "kind_ok": 0} for i in range(n)}
    kinds_seen = {}
    for _, t, _, kv in records(a.dump, {"sample"}):
        i = rev.get(t)
        if i is None:
            continue
        p = per[i]
        p["all"] += 1
        addr = hexint(kv.get("addr", ""))
        if addr is None:
            continue
        o = b.object_at(addr)
        if not o:
            continue
        p["in_obj"] += 1
        if i in o.threads:
            p["own"] += 1
            p["own_shared" if o.shared else "own_private"] += 1
            k = kv.get("kind", "?")
            kinds_seen[k] = kinds_seen.get(k, 0) + 1
            if k in b.allowed_kinds(i, o):
                p["kind_ok"] += 1
    table = " ".join(f"T{trace_index(a, i)}:all={p['all']},in_objects={p['in_obj']},"
                     f"own_shared={p['own_shared']},own_private={p['own_private']}"
                     for i, p in per.items())
    print(f"# {a.name}: samples per benchmark thread: {table}")

    missing = [i for i, p in per.items() if p["all"] == 0]
    if n == 0:
        out("FAIL", f"{a.name}/samples", "no thread lines in the benchmark output")
    elif missing:
        out("FAIL", f"{a.name}/samples",
            "no sample records for benchmark thread(s) " +
            ",".join(f"{i} (trace T{trace_index(a, i)})" for i in missing) + f"; {table}")
    else:
        out("PASS", f"{a.name}/samples")

    has_private = {next(iter(o.threads)) for o in b.objects if not o.shared and o.threads}
    bad = []
    for i, p in per.items():
        if any(i in o.threads for o in b.objects if o.shared) and p["own_shared"] == 0:
            bad.append(f"thread {i} has no sample in its shared object")
        if i in has_private and p["own_private"] == 0:
            bad.append(f"thread {i} has no sample in its private object")
    if bad:
        out("FAIL", f"{a.name}/own-objects",
            "expected >= 1 sample per thread in each object it uses: " + "; ".join(bad) +
            f"; {table}")
    else:
        out("PASS", f"{a.name}/own-objects")

    in_obj = sum(p["in_obj"] for p in per.values())
    own = sum(p["own"] for p in per.values())
    if in_obj == 0:
        out("FAIL", f"{a.name}/attribution", "no sample address inside any printed object")
    elif own < a.min_frac * in_obj:
        out("FAIL", f"{a.name}/attribution",
            f"only {own}/{in_obj} samples inside printed objects are in an object of the "
            f"sampling thread, want >= {a.min_frac:.0%}")
    else:
        out("PASS", f"{a.name}/attribution")

    kind_ok = sum(p["kind_ok"] for p in per.values())
    if own == 0:
        out("FAIL", f"{a.name}/kinds", "no sample in the threads' own objects")
    elif kind_ok < a.min_frac * own:
        out("FAIL", f"{a.name}/kinds",
            f"only {kind_ok}/{own} samples on the threads' objects have the access kind "
            f"the benchmark performs there (kinds seen: {kinds_seen}), want >= "
            f"{a.min_frac:.0%}")
    else:
        out("PASS", f"{a.name}/kinds")


def cmd_threads(a):
    b = bench(a, quiet=True)
    seen = {t for _, t, _, _ in records(a.dump, {"thread_start"})}
    want = {0} | {trace_index(a, i) for i in range(b.nthreads)}
    miss = sorted(want - seen)
    if b.nthreads == 0:
        out("FAIL", f"{a.name}/threads", "no thread lines in the benchmark output")
    elif miss:
        out("FAIL", f"{a.name}/threads",
            f"expected thread_start records for the main thread T0 and the {b.nthreads} "
            f"benchmark threads, missing " + ",".join(f"T{t}" for t in miss) +
            f"; seen {len(seen)} thread(s)")
    else:
        out("PASS", f"{a.name}/threads")


def cmd_wphit(a):
    b = Bench(a.bench_out)
    arms = hits = in_shared = 0
    hit_addrs = []
    for _, t, typ, kv in records(a.dump, {"wp_arm", "wp_hit"}):
        if typ == "wp_arm":
            arms += 1
            continue
        hits += 1
        addr = hexint(kv.get("addr", ""))
        if addr is None:
            continue
        o = b.object_at(addr)
        if o and o.shared:
            in_shared += 1
        elif len(hit_addrs) < 5:
            hit_addrs.append(kv.get("addr"))
    print(f"# {a.name}: {arms} wp_arm, {hits} wp_hit, {in_shared} hits in shared objects")
    if arms == 0:
        out("FAIL", f"{a.name}/wp-arm", "no wp_arm record in the trace")
    else:
        out("PASS", f"{a.name}/wp-arm")
    shared = ", ".join(f"{o.name} 0x{o.lo:x}-0x{o.hi:x}" for o in b.objects if o.shared)
    if in_shared == 0:
        out("FAIL", f"{a.name}/wp-hit",
            f"expected >= 1 wp_hit with addr in {shared}; saw {hits} wp_hit records"
            + (f" (e.g. addr {', '.join(hit_addrs)})" if hit_addrs else ""))
    else:
        out("PASS", f"{a.name}/wp-hit")


def cmd_alloc(a):
    b = Bench(a.bench_out)
    sh = [o for o in b.objects if o.name == "shared"]
    if not sh:
        out("FAIL", f"{a.name}/alloc", "the benchmark printed no shared object")
        return
    o = sh[0]
    want_kind = {"malloc": "malloc", "calloc": "calloc", "realloc": "realloc",
                 "memalign": "memalign", "aligned_alloc": "memalign", "mmap": "mmap"}[o.kind]
    want_size = o.hi - o.lo
    want_old = hexint(o.extra.get("old", "")) if o.kind == "realloc" else None
    allocs, frees = [], []
    for _, t, typ, kv in records(a.dump, {"alloc", "free"}):
        (allocs if typ == "alloc" else frees).append((t, kv))
    at = [(t, kv) for t, kv in allocs if hexint(kv.get("addr", "")) == o.lo]
    desc = (f"alloc addr=0x{o.lo:x} size={want_size} kind={want_kind}" +
            (f" old=0x{want_old:x}" if want_old is not None else ""))
    good = [(t, kv) for t, kv in at if hexint(kv.get("size", "")) == want_size and
            kv.get("kind") == want_kind and
            (want_old is None or hexint(kv.get("old", "")) == want_old)]
    if good:
        out("PASS", f"{a.name}/alloc")
    elif at:
        t, kv = at[-1]
        out("FAIL", f"{a.name}/alloc",
            f"expected {desc}; the record at that address says size={kv.get('size')} "
            f"kind={kv.get('kind')} old={kv.get('old')}")
    else:
        out("FAIL", f"{a.name}/alloc",
            f"expected {desc}; no alloc record at that address among {len(allocs)} alloc "
            f"records")
    want_free = "munmap" if o.kind == "mmap" else "free"
    fr = [kv for t, kv in frees if hexint(kv.get("addr", "")) == o.lo]
    if any(kv.get("kind") == want_free for kv in fr):
        out("PASS", f"{a.name}/free")
    else:
        out("FAIL", f"{a.name}/free",
            f"expected a free record addr=0x{o.lo:x} kind={want_free}; saw "
            f"{[kv.get('kind') for kv in fr] or 'none at that address'} among {len(frees)} "
            f"free records")


def read_csv(path):
    """Matrix CSV: header row (first cell empty, then labels), then one row
    per label: label, numbers.  Returns the n*n matrix by position."""
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                rows.append([c.strip().strip('"') for c in line.split(",")])
    if not rows:
        raise ValueError("empty CSV")
    n = len(rows[0]) - 1
    m = []
    for r in rows[1:]:
        if len(r) != n + 1:
            raise ValueError(f"row with {len(r)} cells, header has {n + 1}")
        m.append([float(x) if x else 0.0 for x in r[1:]])
    if len(m) != n:
        raise ValueError(f"{len(m)} rows for {n} columns")
    return m


def cmd_total(a):
    m = read_csv(a.csv)
    print(f"{sum(sum(r) for r in m):.6g}")


def cmd_p2p(a):
    try:
        m = read_csv(a.csv)
    except (OSError, ValueError) as e:
        out("FAIL", f"{a.name}/pairs", f"cannot read the matrix CSV: {e}")
        return
    n = a.nthreads
    if a.bench:
        a.bench_out = a.bench
        bench(a)
    idx = {i: trace_index(a, i) for i in range(n)}
    if len(m) <= max(idx.values()):
        out("FAIL", f"{a.name}/pairs",
            f"matrix has {len(m)} threads, want >= {max(idx.values()) + 1} (main + {n})")
        return

    def cell(i, j):  # benchmark indices, symmetric sum
        x, y = idx[i], idx[j]
        return m[x][y] + (m[y][x] if x != y else 0)

    pairs = {(i, i + 1): cell(i, i + 1) for i in range(0, n, 2)}
    off = {(i, j): cell(i, j) for i in range(n) for j in range(i + 1, n)
           if i // 2 != j // 2}
    desc = ("pair cells " + ", ".join(f"({i},{j})={v:.4g}" for (i, j), v in pairs.items()) +
            "; largest off-pair cell " +
            (max(((v, k) for k, v in off.items()), default=(0, None)).__repr__()))
    print(f"# {a.name}: {desc}")
    weakest = min(pairs.values())
    worst = max(off.values(), default=0.0)
    if weakest <= 0:
        out("FAIL", f"{a.name}/pairs", f"a pair cell is empty: {desc}")
    elif weakest <= a.ratio * worst:
        out("FAIL", f"{a.name}/pairs",
            f"want every pair cell > {a.ratio}x every off-pair cell: {desc}")
    else:
        out("PASS", f"{a.name}/pairs")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--offset", type=int, default=1,
                    help="trace index of benchmark thread 0 (default 1)")
    ap.add_argument("--info", help="commanalyze info output: map threads by tid")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("samples")
    p.add_argument("name"), p.add_argument("bench_out"), p.add_argument("dump")
    p.add_argument("--min-frac", type=float, default=0.8)
    for c in ("threads", "wphit", "alloc"):
        p = sub.add_parser(c)
        p.add_argument("name"), p.add_argument("bench_out"), p.add_argument("dump")
    p = sub.add_parser("matrix-total")
    p.add_argument("csv")
    p = sub.add_parser("p2p")
    p.add_argument("name"), p.add_argument("csv"), p.add_argument("nthreads", type=int)
    p.add_argument("--ratio", type=float, default=3.0)
    p.add_argument("--bench", help="the benchmark's output (with --info: map by tid)")
    a = ap.parse_args()
    {"samples": cmd_samples, "threads": cmd_threads, "wphit": cmd_wphit,
     "alloc": cmd_alloc, "matrix-total": cmd_total, "p2p": cmd_p2p}[a.cmd](a)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
