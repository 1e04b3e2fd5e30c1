#!/usr/bin/env python3
"""Medians over the three launches of each page size: rankflow's and Open MPI's time (us), and
each library's time on 2 MiB pages over its time on 4 KiB pages (below 1: faster on huge pages)."""
import glob
import os
import statistics as st

here = os.path.dirname(os.path.abspath(__file__))
times = {}
for pages in ("4k", "2m"):
    for path in sorted(glob.glob(os.path.join(here, f"{pages}-*.tbl"))):
        for line in open(path):
            if line.startswith("#"):
                continue
            f = line.split()
            times.setdefault((pages, f[0], int(f[2])), []).append((float(f[3]), float(f[7])))
print("| collective | bytes | rankflow 4 KiB | Open MPI 4 KiB | ratio | rankflow 2 MiB | Open MPI 2 MiB"
      " | ratio | rankflow 2M/4K | Open MPI 2M/4K |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (pages, coll, size) in sorted(k for k in times if k[0] == "4k"):
    if size not in (65536, 1048576, 2097152, 4194304, 8388608, 16777216, 67108864):
        continue
    small = times[("4k", coll, size)]
    huge = times[("2m", coll, size)]
    r4, m4 = st.median(t[0] for t in small), st.median(t[1] for t in small)
    r2, m2 = st.median(t[0] for t in huge), st.median(t[1] for t in huge)
    print(f"| {coll} | {size} | {r4:.1f} | {m4:.1f} | x{m4 / r4:.2f} | {r2:.1f} | {m2:.1f} |"
          f" x{m2 / r2:.2f} | {r2 / r4:.2f} | {m2 / m4:.2f} |")
