#!/usr/bin/env python3
"""The median over several sweeps of rankflow's ratio to Open MPI, per collective and size, and
every row whose median is below 1.0 (issue 13's "never slower", judged on the median of three
sweeps):

    python3 scripts/median-ratios.py [--markdown] results/<stem1>-user.txt results/<stem2>-user.txt ...

Each file is a table written by `rankflow-bench --table` (scripts/bench.sh writes one per buffer
kind and run). The ratio is the bench's own: Open MPI's time over rankflow's below 4 KiB, and
rankflow's busbw over Open MPI's from 4 KiB, both from the same run, so the machine's phase
cancels within a row. Only what users get is judged: allreduce `auto` and the other
collectives' rows (allreduce forced to one algorithm is left out). Prints one line per
collective with the median ratio at each size, then the rows below 1.0 marked
`SLOWER THAN MPI`, and the machine's phase (Open MPI's 4 B allreduce) of each file; with
--markdown, also a table of the medians (and the sweeps' range) at a few sizes.
"""
import statistics
import sys

import bench_table


def read(path):
    rows, phase, _ = bench_table.read(path)
    return {(coll, size): ratio or 0 for coll, size, ratio in rows}, phase


MARKDOWN_SIZES = [8, 1024, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def markdown(keys, medians, sweeps):
    """A table of the median ratio (and the sweeps' range) at MARKDOWN_SIZES."""
    def label(n):
        return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1024 else f"{n} B"
    print("| collective | " + " | ".join(label(n) for n in MARKDOWN_SIZES) + " |")
    print("|---|" + "---|" * len(MARKDOWN_SIZES))
    for coll in sorted({c for c, _ in keys}):
        if coll == "barrier":
            continue
        cells = []
        for n in MARKDOWN_SIZES:
            values = [rows[(coll, n)] for rows, _ in sweeps if (coll, n) in rows]
            cells.append(f"× {medians[(coll, n)]:.2f} ({min(values):.2f}-{max(values):.2f})"
                         if values else "")
        print(f"| {coll} | " + " | ".join(cells) + " |")


def main():
    args = [a for a in sys.argv[1:] if a != "--markdown"]
    if not args:
        sys.exit(__doc__)
    sweeps = [read(path) for path in args]
    for path, (_, phase) in zip(args, sweeps):
        print(f"# {path}: machine phase, Open MPI's 4 B allreduce {phase} us")
    keys = sorted({k for rows, _ in sweeps for k in rows}, key=lambda k: (k[0], k[1]))
    medians = {k: statistics.median([rows[k] for rows, _ in sweeps if k in rows]) for k in keys}
    collectives = []
    for coll, _ in keys:
        if coll not in collectives:
            collectives.append(coll)
    print(f"# median over {len(sweeps)} sweeps of the ratio to Open MPI (time below 4 KiB, busbw)")
    for coll in collectives:
        cells = [f"{size}:{medians[(c, size)]:.2f}" for c, size in keys if c == coll]
        print(f"{coll:15s} " + " ".join(cells))
    slower = [(k, medians[k]) for k in keys if medians[k] < 1.0]
    for (coll, size), ratio in slower:
        spread = ", ".join(f"{rows[(coll, size)]:.2f}" for rows, _ in sweeps if (coll, size) in rows)
        print(f"SLOWER THAN MPI  {coll:15s} {size:10d}  x{ratio:.2f}  (sweeps: {spread})")
    print(f"# {len(slower)} of {len(keys)} rows below 1.0 in the median")
    if "--markdown" in sys.argv:
        markdown(keys, medians, sweeps)


if __name__ == "__main__":
    main()
