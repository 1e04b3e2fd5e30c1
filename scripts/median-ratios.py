#!/usr/bin/env python3
"""The median over several sweeps of rankflow's ratio to Open MPI, per collective and size, and
every row whose median is below 1.0 (issue 13's "never slower", judged on the median of three
sweeps):

    python3 scripts/median-ratios.py results/<stem1>-user.txt results/<stem2>-user.txt ...

Each file is a table written by `rankflow-bench --table` (scripts/bench.sh writes one per buffer
kind and run). The ratio is the bench's own: Open MPI's time over rankflow's below 4 KiB, and
rankflow's busbw over Open MPI's from 4 KiB, both from the same run, so the machine's phase
cancels within a row. Only what users get is judged: allreduce `auto` and the other
collectives' rows (allreduce forced to one algorithm is left out). Prints one line per
collective with the median ratio at each size, then the rows below 1.0 marked
`SLOWER THAN MPI`, and the machine's phase (Open MPI's 4 B allreduce) of each file.
"""
import statistics
import sys


def read(path):
    rows, phase = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            fields = line.split()
            coll, algo, size = fields[0], fields[1], int(fields[2])
            oop_us, oop_bw, mpi_us, mpi_bw = (float(fields[i]) for i in (3, 4, 7, 8))
            if coll == "allreduce" and size == 4 and algo == "auto":
                phase = mpi_us
            if coll == "allreduce" and algo != "auto":
                continue
            if oop_us <= 0 or mpi_us <= 0:
                continue
            ratio = mpi_us / oop_us if size < 4096 else (oop_bw / mpi_bw if mpi_bw > 0 else 0)
            rows[(coll, size)] = ratio
    return rows, phase


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sweeps = [read(path) for path in sys.argv[1:]]
    for path, (_, phase) in zip(sys.argv[1:], sweeps):
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


if __name__ == "__main__":
    main()
