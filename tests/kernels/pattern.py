#!/usr/bin/env python3
"""Compare a kernel's communication matrices (tests/kernels/README.md).

  pattern.py OUT CSV [CSV2]

OUT is the kernel's stdout (its `thread_info W tid=N` lines map worker W to
a trace thread), CSV a `commanalyze matrix --format csv` (symmetric) of its
trace.  Prints the workers' matrix (rows and columns: worker index), and with
CSV2 (the exact matrix of another run of the same kernel) the Pearson r of
the two over the worker pairs (the upper triangle) and each pair's value.
The main thread (T0) is left out: the kernels' workers carry the pattern.

  pattern.py --r OUT CSV OUT2 CSV2     only r, as a number
  pattern.py --check KERNEL OUT CSV [N]  the kernel's pattern in an exact
      matrix (symmetric CSV; pipeline: --directed), N its size parameter
      (stencil sweeps, omp_reduce iterations, pipeline items x lines per
      buffer); prints what fails, exits 1 if anything does
  pattern.py --wp-check DUMP        the watchpoint records of a `commanalyze
      dump --raw --type wp_arm,wp_hit`: every hit is on the word its register
      watches in the thread's last arm (line watches: inside the line of
      the thread's newest arm of it), at most one hit per arm (line
      watches: a first hit and the overwrite of the publication's bytes),
      the watcher is not the publisher; prints the hits, exits 1 on a
      violation
  pattern.py --r-min EVENTS PAIRS      the lowest r (at 99.9% confidence) of an
      estimate against a pattern of PAIRS equal pairs and zeros elsewhere,
      when EVENTS Poisson events fall on those pairs (see r_min)
  pattern.py --ring EVENTS OUT CSV [EXOUT EXCSV]  a sampled --directed
      matrix with EVENTS events is a ring (pipeline): bounds in ring_check,
      off the ring at most exact's share there (EXCSV, directed, at least
      1%); exits 1 if not
  pattern.py --r-min-of EVENTS OUT CSV  the same against the pattern of an
      exact matrix, when EVENTS Poisson events fall on its pairs in
      proportion to their volumes (see r_min_pattern)
"""
import csv
import math
import re
import sys


def workers(out_path):
    """tid -> worker index, from the kernel's thread_info lines."""
    m = {}
    with open(out_path) as f:
        for line in f:
            g = re.match(r"thread_info (\d+) tid=(\d+)", line)
            if g:
                m[int(g.group(2))] = int(g.group(1))
    return m


def matrix(out_path, csv_path):
    """The workers' matrix (list of lists) of a symmetric CSV matrix."""
    w = workers(out_path)
    with open(csv_path) as f:
        rows = list(csv.reader(f))
    tids = [int(re.search(r"\((\d+)\)", h).group(1)) for h in rows[0][1:]]
    n = len(w)
    m = [[0.0] * n for _ in range(n)]
    for r in rows[1:]:
        a = w.get(int(re.search(r"\((\d+)\)", r[0]).group(1)))
        for k, v in enumerate(r[1:]):
            b = w.get(tids[k])
            if a is not None and b is not None:
                m[a][b] = float(v)
    return m


def pairs(m):
    n = len(m)
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def pearson(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sx = math.sqrt(sum((a - mx) ** 2 for a in x))
    sy = math.sqrt(sum((b - my) ** 2 for b in y))
    return sxy / (sx * sy) if sx > 0 and sy > 0 else 0.0


def r_min(events, npairs, alpha=1e-3):
    """Pattern: npairs cells of equal volume, the others 0 (a stencil's
    neighbour pairs).  An estimate that puts Poisson(lam) events on each of
    them (lam = events / npairs) and none elsewhere has, against the pattern,
    r = 1 / sqrt(1 + 2 * s2 / m^2) (6 cells, 3 of them the pairs), where m
    and s2 are the mean and variance of the 3 counts; with the normal
    approximation s2 / m^2 ~ chi2(2) / (3 lam), so that
    r >= 1 / sqrt(1 + 2 q / (3 lam))
    with probability 1 - alpha, q the chi2(2) quantile -2 ln(alpha).  (Exact
    Poisson sums agree: lam = 60, P(r < 0.9) = 3.4e-5 exact, 2.6e-5 by this.)"""
    if npairs != 3:
        raise SystemExit("r_min: derived for 3 pairs of 4 workers")
    lam = events / npairs
    if lam <= 0:
        return 0.0
    q = -2.0 * math.log(alpha)
    return 1.0 / math.sqrt(1.0 + 2.0 * q / (3.0 * lam))


def poisson(rng, lam):
    """A Poisson(lam) draw: Knuth's product below 30, else the normal
    approximation rounded (its error there is far below the bound's)."""
    if lam < 30:
        k, t, lim = 0, rng.random(), math.exp(-lam)
        while t > lim:
            k += 1
            t *= rng.random()
        return k
    return max(0, int(round(rng.gauss(lam, math.sqrt(lam)))))


def r_min_pattern(events, pattern, alpha=1e-3, trials=20000):
    """The lowest r (at confidence 1 - alpha) against `pattern` (the exact
    matrix's pair values) of an estimate that puts Poisson events on each
    pair in proportion to the pattern, `events` of them in all: the
    alpha-quantile of r over `trials` draws (a fixed seed: the same bound
    every run).  r_min is its closed form for 3 equal pairs and zeros."""
    import random
    rng = random.Random(12345)
    tot = sum(pattern)
    if events <= 0 or tot <= 0:
        return 0.0
    lams = [events * v / tot for v in pattern]
    rs = sorted(pearson([poisson(rng, l) for l in lams], pattern) for _ in range(trials))
    return rs[int(alpha * trials)]


def poisson_tail(lam, k):
    """P(X >= k) for X ~ Poisson(lam)."""
    term, cdf = math.exp(-lam), 0.0
    for i in range(int(k)):
        cdf += term
        term *= lam / (i + 1)
    return max(0.0, 1.0 - cdf)


def off_ring(m):
    """The share of a directed matrix m (row receives from column) off the
    ring (stages two apart, backwards)."""
    w = len(m)
    tot = sum(map(sum, m))
    off = sum(m[i][j] for i in range(w) for j in range(w) if i != j and (i - j) % w != 1)
    return off / tot if tot > 0 else 0.0


def ring_check(m, events, share=0.01, alpha=1e-6):
    """A sampled directed matrix m (row receives from column) of a ring
    (pipeline) with `events` events: what fails.  Off the ring (stages two
    apart, backwards) exact has at most `share` of the volume (the caller
    measures it: the mailboxes' synchronization puts a few percent there),
    so the events there are Poisson of mean at most events x share: more
    than its 1 - alpha quantile fail.  A ring step with no event fails: with at
    least half its equal share (events / 2w), 0 has probability
    exp(-events / 2w) (below alpha from 14 w events)."""
    w = len(m)
    tot = sum(map(sum, m))
    if tot <= 0 or events <= 0:
        return ["no events"]
    ring = [m[(s + 1) % w][s] for s in range(w)]
    off = off_ring(m) * events
    lam, k = events * share, 0
    while poisson_tail(lam, k + 1) > alpha:
        k += 1
    bad = []
    if off > k:
        bad.append("%.0f events off the ring (at most %d: the 1e-6 tail of Poisson(%.1f))"
                   % (off, k, lam))
    if min(ring) <= 0 and math.exp(-events / (2.0 * w)) < alpha:
        bad.append("a ring step without events: %s" % ring)
    return bad


def check(kernel, m, n):
    """The ground-truth pattern of each kernel (tests/kernels/README.md) in
    an exact matrix m (workers); returns the list of what fails."""
    bad = []
    w = len(m)
    cells = pairs(m)
    if kernel == "stencil":
        # each sweep, w + 1 reads the edge line that w wrote (and back)
        near = [m[i][i + 1] for i in range(w - 1)]
        if min(near) < n:
            bad.append("a neighbour pair below %d (one line per sweep): %s" % (n, near))
        far = [m[i][j] for i, j in cells if j > i + 1]
        if far and max(far) > min(near) / 100:
            bad.append("pairs two apart above 1%% of the neighbours: %s" % far)
    elif kernel == "omp_reduce":
        # every iteration every thread reads the vector the master rewrote;
        # the others share at most the reduction's line
        master = [m[0][j] for j in range(1, w)]
        others = [m[i][j] for i, j in cells if i > 0]
        if min(master) < n:
            bad.append("a master pair below %d (one line per iteration): %s" % (n, master))
        if others and max(others) * 3 > min(master):
            bad.append("a pair without the master above 1/3 of the master's: %s" % others)
    elif kernel == "alltoall":
        # uniform keys: every pair the same volume in expectation
        vals = [m[i][j] for i, j in cells]
        mean = sum(vals) / len(vals)
        if mean <= 0 or min(vals) < mean / 3:
            bad.append("a pair below 1/3 of the mean (uniform expected): %s" % vals)
    elif kernel == "pipeline":
        # directed (row receives from column): s + 1 from s, 0 from the last
        ring = [m[(s + 1) % w][s] for s in range(w)]
        if min(ring) < n:
            bad.append("a ring step below %d (every line of every buffer): %s" % (n, ring))
        apart = [m[i][j] for i in range(w) for j in range(w)
                 if i != j and (i - j) % w not in (1, w - 1)]
        if apart and max(apart) > min(ring) / 100:
            bad.append("stages two apart above 1%% of the ring: %s" % apart)
    else:
        bad.append("unknown kernel " + kernel)
    return bad


def wp_check(dump_path):
    """(hits, violations) of the arm/hit rules in a dump (see the usage).
    Debug-register arms (8-byte words): a hit is on the word its register
    watches in the thread's last arm, one hit per arm.  Line watches (an arm
    of one register longer than a word: software watchpoints): a hit lies
    inside the line of the thread's newest arm of that line, its bytes in
    that line; an arm's first hit may be followed by one more, its
    overwrite: a store (or atomic) to the bytes of the arm's publication,
    which ends it (format 5; a first hit that is an overwrite ends it
    too)."""
    last = {}       # thread -> [words, publisher, hits]
    lines = {}      # (thread, line start) -> [line end, publisher, hits, pub lo, pub hi, ended]
    hits, bad = 0, []
    with open(dump_path) as f:
        for line in f:
            p = line.split()
            if len(p) < 3:
                continue
            th, kind = p[1], p[2]
            kv = dict(x.split("=", 1) for x in p[3:] if "=" in x)
            if kind == "wp_arm":
                regs = [(int(w.split(":")[0], 16), int(w.split(":")[1])) for w in kv["wp"].split(",")]
                pub = int(kv.get("pub_addr", "0"), 16)
                if regs[0][1] > 8:
                    end = regs[-1][0] + regs[-1][1]
                    lines[(th, regs[0][0])] = [end, "T" + kv["publisher"], 0, pub,
                                               pub + int(kv.get("pub_len", "1")), False]
                else:
                    last[th] = [[w for w, _ in regs], "T" + kv["publisher"], 0]
            elif kind == "wp_hit":
                hits += 1
                reg, addr = int(kv["reg"]), int(kv["addr"], 16)
                hlen = int(kv.get("len", "1"))
                store = kv.get("kind") in ("store", "atomic")
                a = None
                for (t, lo), v in lines.items():
                    if t == th and lo <= addr < v[0]:
                        a = v
                        if addr + hlen > v[0]:
                            bad.append("hit past its line: " + line.strip())
                        break
                if a is None:
                    a = last.get(th)
                    if a is not None and not a[2] and (reg >= len(a[0]) or a[0][reg] != addr):
                        bad.append("hit not on its register's word: " + line.strip())
                    if a is not None and a[2]:
                        bad.append("second hit of one arm: " + line.strip())
                if a is None:
                    bad.append("hit without an arm: " + line.strip())
                elif len(a) > 3 and a[5]:
                    bad.append("hit after its watch's overwrite: " + line.strip())
                elif len(a) > 3 and a[2] and not (store and addr < a[4] and a[3] < addr + hlen):
                    bad.append("second hit not an overwrite: " + line.strip())
                elif a[1] == th:
                    bad.append("the publisher watched itself: " + line.strip())
                elif kv.get("kind") not in ("load", "store", "atomic"):
                    bad.append("hit without a kind: " + line.strip())
                if a is not None:
                    a[2] += 1
                    if len(a) > 3 and store and addr < a[4] and a[3] < addr + hlen:
                        a[5] = True
    return hits, bad


def main(argv):
    if len(argv) == 2 and argv[0] == "--wp-check":
        hits, bad = wp_check(argv[1])
        print("hits %d" % hits)
        for b in bad[:10]:
            print(b)
        sys.exit(1 if bad else 0)
    if len(argv) in (4, 5) and argv[0] == "--check":
        m = matrix(argv[2], argv[3])
        bad = check(argv[1], m, float(argv[4]) if len(argv) == 5 else 1)
        for b in bad:
            print(b)
        sys.exit(1 if bad else 0)
    if len(argv) == 3 and argv[0] == "--r-min":
        print("%.4f" % r_min(float(argv[1]), int(argv[2])))
        return
    if len(argv) == 4 and argv[0] == "--r-min-of":
        m = matrix(argv[2], argv[3])
        print("%.4f" % r_min_pattern(float(argv[1]), [m[i][j] for i, j in pairs(m)]))
        return
    if len(argv) in (4, 6) and argv[0] == "--ring":
        share = 0.01
        if len(argv) == 6:
            share = max(share, off_ring(matrix(argv[4], argv[5])))
        bad = ring_check(matrix(argv[2], argv[3]), float(argv[1]), share)
        for b in bad:
            print(b)
        sys.exit(1 if bad else 0)
    if len(argv) == 5 and argv[0] == "--r":
        a, b = matrix(argv[1], argv[2]), matrix(argv[3], argv[4])
        if len(a) != len(b):
            sys.exit("different worker counts")
        p = pairs(a)
        print("%.4f" % pearson([a[i][j] for i, j in p], [b[i][j] for i, j in p]))
        return
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    m = matrix(argv[0], argv[1])
    for i, row in enumerate(m):
        print("W%d %s" % (i, " ".join("%g" % v for v in row)))
    for i, j in pairs(m):
        print("pair %d %d %g" % (i, j, m[i][j]))


if __name__ == "__main__":
    main(sys.argv[1:])
