#!/usr/bin/env python3
"""Medians over the launches of each build: out-of-place and in-place all_to_all time, and Open
MPI's (out-of-place) MPI_Alltoall from the same launches. Usage: summarise.py (in this folder)."""
import glob
import statistics

for kind in ("symmetric", "registered"):
    print(f"## {kind} buffers: median of 3 launches, us (ours in place / Open MPI's out of place)")
    print("| bytes | base oop | base in place | swap oop | swap in place | Open MPI (swap's launches) | in place, Open MPI / swap |")
    print("|---|---|---|---|---|---|---|")
    rows = {}
    for build in ("base", "swap"):
        for path in sorted(glob.glob(f"{build}-{kind}-*.tbl")):
            for line in open(path):
                if line.startswith("#"):
                    continue
                f = line.split()
                rows.setdefault((int(f[2]), build), []).append((float(f[3]), float(f[5]), float(f[7])))
    for size in sorted({s for s, _ in rows}):
        med = {b: [statistics.median(v[i] for v in rows[(size, b)]) for i in range(3)] for b in ("base", "swap")}
        print(f"| {size} | {med['base'][0]:.2f} | {med['base'][1]:.2f} | {med['swap'][0]:.2f} | "
              f"{med['swap'][1]:.2f} | {med['swap'][2]:.2f} | x{med['swap'][2] / med['swap'][1]:.2f} |")
    print()
