#!/usr/bin/env python3
"""Summary of a scaling sweep (scripts/scaling.sh): for each table np<N>-<buffers>.txt in the
folder, the machine's phase (Open MPI's 4 B allreduce), the median ratio to Open MPI of each
collective below 4 KiB, from 4 KiB to 64 KiB and from 64 KiB, every row below 1.0 marked
SLOWER THAN MPI, and every row with wrong results marked WRONG RESULTS (then it exits with 1). The ratio is the bench's own: Open MPI's time over rankflow's below 4 KiB,
rankflow's busbw over Open MPI's from 4 KiB, both from the same run. Allreduce rows forced to one
algorithm are left out (users get `auto`).

    python3 scripts/scaling-summary.py [--markdown] FOLDER
"""
import glob
import os
import re
import statistics
import sys

import bench_table

BANDS = [("< 4 KiB", 0, 4096), ("4-64 KiB", 4096, 65536), (">= 64 KiB", 65536, 1 << 62)]


def read(path):
    rows, phase, wrong = bench_table.read(path)
    by_collective = {}
    for coll, size, ratio in rows:
        if ratio is not None:  # no busbw to compare (zero bytes moved)
            by_collective.setdefault(coll, []).append((size, ratio))
    return by_collective, phase, wrong


def band_medians(points):
    cells = []
    for _, lo, hi in BANDS:
        values = [r for s, r in points if lo <= s < hi]
        cells.append(f"x{statistics.median(values):.2f}" if values else "-")
    return cells


def order(path):  # np4-symmetric before np4-user before np8-...
    m = re.match(r"np(\d+)-(\w+)\.txt", os.path.basename(path))
    return (int(m.group(1)), m.group(2)) if m else (1 << 30, path)


def main():
    args = sys.argv[1:]
    markdown = "--markdown" in args
    args = [a for a in args if a != "--markdown"]
    if len(args) != 1:
        sys.exit(__doc__)
    paths = sorted(glob.glob(os.path.join(args[0], "np*-*.txt")), key=order)
    if not paths:
        sys.exit(f"no np<N>-<buffers>.txt tables in {args[0]}")
    table = []
    wrong_rows = 0
    for path in paths:
        rows, phase, wrong = read(path)
        name = os.path.basename(path)[:-4]
        print(f"\n{name} (phase: Open MPI 4 B allreduce {phase} us), median ratio to Open MPI:")
        print(f"  {'collective':<16}" + "".join(f"{b[0]:>11}" for b in BANDS))
        for coll, points in rows.items():
            cells = band_medians(points)
            table.append((name, phase, coll, cells))
            print(f"  {coll:<16}" + "".join(f"{c:>11}" for c in cells))
        for coll, points in rows.items():
            for size, ratio in points:
                if ratio < 1.0:
                    print(f"  SLOWER THAN MPI: {coll} {size} B x{ratio:.2f}")
        for row in wrong:
            print(f"  WRONG RESULTS: {row}")
            wrong_rows += 1
    if markdown:
        print("\n| run | phase (us) | collective | " + " | ".join(b[0] for b in BANDS) + " |")
        print("|---|---|---|" + "---|" * len(BANDS))
        for name, phase, coll, cells in table:
            print(f"| {name} | {phase} | {coll} | " + " | ".join(cells) + " |")
    if wrong_rows:
        sys.exit(f"{wrong_rows} rows with wrong results")


if __name__ == "__main__":
    main()
