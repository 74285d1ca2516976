#!/usr/bin/env python3
"""Cross-thread timestamp order in a full trace of tests/inst/pingpong.c.

usage: commanalyze dump --raw TRACE | order.py - RANGES     (or order.py DUMP RANGES)
For every store of the token by one thread, the other thread's last load of
the token before its own next store is the load that saw it.  delta =
time(that load) - time(the store); a negative delta is a pair that the
timestamps put in the wrong order.  Prints counts and percentiles."""
import sys

lo = hi = None
for line in open(sys.argv[2]):
    p = line.split()
    if len(p) == 4 and p[0] == "RANGE" and p[1] == "turn":
        lo, hi = int(p[2], 16), int(p[3], 16)
f = sys.stdin if sys.argv[1] == "-" else open(sys.argv[1])
last_load = {}   # thread -> time of its last load of the token
stores = {}      # thread -> [store times]
seen = {}        # thread -> [time of the load before each of its stores]
for line in f:
    p = line.split()
    if len(p) < 3 or p[2] != "sample":
        continue
    kv = dict(x.split("=", 1) for x in p[3:] if "=" in x)
    a = int(kv["addr"], 16)
    if not (lo <= a < hi):
        continue
    t, tm = p[1], int(p[0])
    if kv["kind"] == "load":
        last_load[t] = tm
    else:
        stores.setdefault(t, []).append(tm)
        seen.setdefault(t, []).append(last_load.get(t))
ths = sorted(stores)
if len(ths) != 2:
    sys.exit("expected 2 threads storing the token, got %d" % len(ths))
A, B = ths
deltas = []
# A's i-th store is seen by B's i-th observation; B's i-th store by A's (i+1)-th
for i, ts in enumerate(stores[A]):
    if i < len(seen[B]) and seen[B][i] is not None:
        deltas.append(seen[B][i] - ts)
for i, ts in enumerate(stores[B]):
    if i + 1 < len(seen[A]) and seen[A][i + 1] is not None:
        deltas.append(seen[A][i + 1] - ts)
deltas.sort()
n = len(deltas)
neg = sum(1 for d in deltas if d < 0)
tie = sum(1 for d in deltas if d == 0)
def pct(q):
    return deltas[min(n - 1, int(q * n))]
print("handoffs=%d wrong_order=%d ties=%d min=%d p0.1=%d p1=%d p50=%d" %
      (n, neg, tie, deltas[0], pct(0.001), pct(0.01), pct(0.5)))
