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
    roundtrip.py sparse DENSE.csv DENSE.h5 SPARSE.csv SPARSE.json SPARSE.h5
                                           the sparse forms (triplets of the non-zero
                                           cells, by row then column) hold the dense
                                           forms' matrix cell for cell, read by pandas
                                           (csv) and h5py (a compound dataset)
    roundtrip.py ring N FILE.csv FILE.json FILE.h5
                                           the directed sparse matrix of ana_mktrace's
                                           ring of N threads, board 65536: exactly the
                                           cells (i + 1 mod N, i) = 1000
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
            # (past 1024 rows the labels are in the scales only)
            labels = [x.decode() if isinstance(x, bytes) else x for x in obj.attrs["labels"]] \
                if "labels" in obj.attrs else None
            for d in (0, 1):
                if len(obj.dims[d]) != 1:
                    problems.append(f"{name}: dimension {d} has no scale")
                    continue
                sc = [x.decode() if isinstance(x, bytes) else x for x in obj.dims[d][0][()]]
                if labels is not None and sc != labels:
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


def h5_module():
    try:
        import h5py
        import numpy
    except ImportError:
        print("h5py not installed", file=sys.stderr)
        sys.exit(3)
    return h5py, numpy


def sparse_csv(path):
    """The triplets of a sparse CSV as {(row, col): value}, checked for order and zeros."""
    try:
        import pandas
    except ImportError:
        print("pandas not installed", file=sys.stderr)
        sys.exit(3)
    df = pandas.read_csv(path, keep_default_na=False)
    if list(df.columns) != ["row", "column", "row_label", "column_label", "value"]:
        fail(f"{path}: header {list(df.columns)}")
    keys = list(zip(df["row"].tolist(), df["column"].tolist()))
    if keys != sorted(keys) or len(set(keys)) != len(keys):
        fail(f"{path}: cells not by row then column, or repeated")
    if (df["value"] == 0).any():
        fail(f"{path}: a zero cell listed")
    return dict(zip(keys, df["value"].tolist())), df


def sparse_json(path):
    with open(path) as f:
        m = json.load(f)["matrices"][0]
    if m.get("layout") != "sparse" or "data" in m or m["nnz"] != len(m["cells"]):
        fail(f"{path}: not the sparse form")
    return {(i, j): v for i, j, v in m["cells"]}, m


def sparse_h5(path):
    h5py, numpy = h5_module()
    with h5py.File(path, "r") as f:
        names = [k for k in f if "kind" in f[k].attrs]
        if len(names) != 1:
            fail(f"{path}: matrices {names}")
        d = f[names[0]]
        if d.attrs["layout"] != "sparse" or d.ndim != 1 or d.dtype.names != ("row", "column", "value"):
            fail(f"{path}: not the sparse form: {d.dtype}")
        a = d[()]
        n = int(d.attrs["n"])
        labels = [x.decode() if isinstance(x, bytes) else x for x in f[d.attrs["index"] + "_row"][()]]
        return {(int(r), int(c)): float(v) for r, c, v in a}, n, labels


def check_sparse(dense_csv, dense_h5, sp_csv, sp_json, sp_h5):
    rows = read_csv(dense_csv)
    labels = rows[0][1:]
    dense = {(i, j): float(v) for i, r in enumerate(rows[1:]) for j, v in enumerate(r[1:]) if float(v) != 0}
    c, df = sparse_csv(sp_csv)
    j, m = sparse_json(sp_json)
    h, n, hl = sparse_h5(sp_h5)
    for name, cells in (("csv", c), ("json", j), ("h5", h)):
        if cells != dense:
            diff = sorted(set(cells.items()) ^ set(dense.items()))[:4]
            fail(f"{name}: sparse cells differ from the dense matrix: {diff}")
    if m["n"] != len(labels) or n != len(labels) or m["labels"] != labels or hl != labels:
        fail(f"size or labels differ: {m['n']} {n} {len(labels)}")
    for r, cl, rl, cll in zip(df["row"], df["column"], df["row_label"], df["column_label"]):
        if labels[r] != rl or labels[cl] != cll:
            fail(f"csv labels of ({r}, {cl}): {rl} {cll}")
    h5py, numpy = h5_module()
    with h5py.File(dense_h5, "r") as f:
        d = [f[k] for k in f if "kind" in f[k].attrs][0][()]
        full = numpy.zeros((n, n))
        for (r, cl), v in h.items():
            full[r, cl] = v
        if not numpy.array_equal(d, full):
            fail("h5: the dense dataset and the sparse one differ")
    print(f"{sp_csv}: {len(dense)} non-zero cells of {n} x {n}, equal in csv, json, h5 and the dense forms")


def check_ring(n, sp_csv, sp_json, sp_h5):
    n = int(n)
    want = {((i + 1) % n, i): 1000.0 for i in range(n)}
    c, df = sparse_csv(sp_csv)
    j, m = sparse_json(sp_json)
    h, hn, labels = sparse_h5(sp_h5)
    for name, cells in (("csv", c), ("json", j), ("h5", h)):
        if cells != want:
            diff = sorted(set(cells.items()) ^ set(want.items()))[:4]
            fail(f"{name}: {len(cells)} cells, not the ring's {n}: {diff}")
    if m["n"] != n or hn != n or len(m["labels"]) != n or labels != m["labels"]:
        fail(f"sizes {m['n']} {hn} {len(m['labels'])}")
    if df["row_label"].tolist()[:2] != [m["labels"][0], m["labels"][1]]:
        fail(f"csv labels {df['row_label'].tolist()[:2]}")
    print(f"{sp_csv}: the {n} cells of the ring, exactly")


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
    elif cmd == "sparse":
        check_sparse(*argv[2:7])
    elif cmd == "ring":
        check_ring(*argv[2:6])
    else:
        fail(f"unknown check {cmd}")


if __name__ == "__main__":
    main(sys.argv)
