#!/usr/bin/env python3
"""Count the records of a `commanalyze dump --raw` per thread, kind and address
range (tests/e2e/inst.sh).

usage: count.py DUMP RANGES
  RANGES: lines "RANGE name lo hi" (as printed by tests/inst/exact.c)
Prints key=value lines:
  T<n>.<kind>=N              samples of thread n by kind (load, store, atomic)
  T<n>.<range>.<kind>=N      ... with the address inside the range
  T<n>.<range>.<kind>.len<L>=N   ... and access length L
  T<n>.func_enter=N, T<n>.func_exit=N, samples=N
"""
import collections
import sys

ranges = []
with open(sys.argv[2]) as f:
    for line in f:
        p = line.split()
        if len(p) == 4 and p[0] == "RANGE":
            ranges.append((p[1], int(p[2], 16), int(p[3], 16)))

c = collections.Counter()
with open(sys.argv[1]) as f:
    for line in f:
        p = line.split()
        if len(p) < 3:
            continue
        t, typ = p[1], p[2]
        if typ in ("func_enter", "func_exit"):
            c[f"{t}.{typ}"] += 1
            continue
        if typ != "sample":
            continue
        kv = dict(x.split("=", 1) for x in p[3:] if "=" in x)
        kind = kv.get("kind", "?")
        addr = int(kv.get("addr", "0"), 16)
        c["samples"] += 1
        c[f"{t}.{kind}"] += 1
        for name, lo, hi in ranges:
            if lo <= addr < hi:
                c[f"{t}.{name}.{kind}"] += 1
                c[f"{t}.{name}.{kind}.len{kv.get('len')}"] += 1
for k in sorted(c):
    print(f"{k}={c[k]}")
