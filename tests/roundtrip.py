#!/usr/bin/env python3
"""Read commanalyze's machine-readable outputs back (tests/e2e/roundtrip.sh).

    roundtrip.py csv FILE [COLUMNS]        every row as many fields as the header
                                           (COLUMNS: that many); with pandas, the
                                           same shape from pandas.read_csv
    roundtrip.py csv-field FILE ROW COL    print one field (ROW 0: the header)
    roundtrip.py matrix FILE.csv FILE.json the CSV matrix and the JSON one agree
                                           cell for cell and label for label
    roundtrip.py json FILE                 parses as JSON (prints the top keys)
    roundtrip.py h5 FILE                   h5py: numbers (attributes, grid values)
                                           stored as numbers, matrices with their
                                           labels as dimension scales, the sweep's
                                           summary with its axes as scales
Exit 0 when the check holds, 1 with a message otherwise, 3 when a module
the check needs is missing (pandas only warns).
"""
import csv
import json
import sys


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f, strict=True))


def check_csv(path, columns=None):
    rows = read_csv(path)
    if not rows:
        fail(f"{path}: empty")
    width = len(rows[0]) if columns is None else int(columns)
    for i, r in enumerate(rows):
        if len(r) != width:
            fail(f"{path}: row {i} has {len(r)} fields, expected {width}: {r}")
    try:
        import pandas
    except ImportError:
        print(f"{path}: {len(rows)} rows x {width} (pandas not installed)")
        return
    df = pandas.read_csv(path, keep_default_na=False)
    if df.shape != (len(rows) - 1, width):
        fail(f"{path}: pandas reads {df.shape}, csv {len(rows) - 1} x {width}")
    print(f"{path}: {len(rows)} rows x {width}, pandas {df.shape}")


def check_matrix(csv_path, json_path):
    rows = read_csv(csv_path)
    with open(json_path) as f:
        m = json.load(f)["matrices"][0]
    labels = rows[0][1:]
    if labels != m["labels"]:
        fail(f"labels differ: {labels} vs {m['labels']}")
    cells = m["data"]
    for i, r in enumerate(rows[1:]):
        if r[0] != m["labels"][i]:
            fail(f"row {i}: label {r[0]} vs {m['labels'][i]}")
        for j, v in enumerate(r[1:]):
            if float(v) != float(cells[i][j]):
                fail(f"cell {i},{j}: csv {v}, json {cells[i][j]}")
    print(f"{csv_path}: {len(labels)} x {len(labels)} cells equal to the JSON")


def is_number_text(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def check_h5(path):
    try:
        import h5py
        import numpy
    except ImportError:
        print("h5py not installed", file=sys.stderr)
        sys.exit(3)
    problems = []
    seen = []

    def visit(name, obj):
        seen.append(name)
        for k, v in obj.attrs.items():
            if isinstance(v, (bytes, str)):
                text = v.decode() if isinstance(v, bytes) else v
                if is_number_text(text) and k not in ("tool", "trace", "command", "version"):
                    problems.append(f"{name}@{k} = {text!r}: a number stored as a string")
        if isinstance(obj, h5py.Dataset) and "kind" in obj.attrs and obj.ndim == 2 and obj.shape[0]:
            # a matrix: its labels as the scales of both dimensions
            labels = [x.decode() if isinstance(x, bytes) else x for x in obj.attrs["labels"]]
            for d in (0, 1):
                if len(obj.dims[d]) != 1:
                    problems.append(f"{name}: dimension {d} has no scale")
                    continue
                sc = [x.decode() if isinstance(x, bytes) else x for x in obj.dims[d][0][()]]
                if sc != labels:
                    problems.append(f"{name}: dimension {d} scale {sc} is not the labels {labels}")
        if isinstance(obj, h5py.Dataset) and name.startswith("summary/"):
            for d in range(obj.ndim):
                if len(obj.dims[d]) != 1:
                    problems.append(f"{name}: axis {d} has no scale")
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "SUO" and obj.size:
            vals = [x.decode() if isinstance(x, bytes) else str(x) for x in obj[()].flat]
            if all(is_number_text(x) for x in vals):
                problems.append(f"{name}: numbers stored as strings {vals[:4]}")

    with h5py.File(path, "r") as f:
        f.visititems(visit)
        for k, v in f.attrs.items():
            if isinstance(v, (bytes, str)):
                text = v.decode() if isinstance(v, bytes) else v
                if is_number_text(text):
                    problems.append(f"/@{k} = {text!r}: a number stored as a string")
    if problems:
        fail("\n".join(problems))
    print(f"{path}: {len(seen)} objects, numbers stored as numbers")


def main(argv):
    if len(argv) < 3:
        fail(__doc__)
    cmd = argv[1]
    if cmd == "csv":
        check_csv(argv[2], argv[3] if len(argv) > 3 else None)
    elif cmd == "csv-field":
        print(read_csv(argv[2])[int(argv[3])][int(argv[4])])
    elif cmd == "matrix":
        check_matrix(argv[2], argv[3])
    elif cmd == "json":
        with open(argv[2]) as f:
            doc = json.load(f)
        print(" ".join(sorted(doc)) if isinstance(doc, dict) else type(doc).__name__)
    elif cmd == "h5":
        check_h5(argv[2])
    else:
        fail(f"unknown check {cmd}")


if __name__ == "__main__":
    main(sys.argv)
