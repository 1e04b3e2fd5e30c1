#!/usr/bin/env python3
# Pools the all_to_all rows of the own-block logs here: every launch's ratio to Open MPI, the
# tables' build (base) against the builds that stream the all_to_all's own block from 2 MiB
# (own2m, own-a2a: the same all_to_all path), median per size.
import statistics, sys, glob, os
here = os.path.dirname(os.path.abspath(__file__))
pool = {}
for f in sorted(glob.glob(os.path.join(here, 'own-block-*.log'))):
    build = None
    for line in open(f):
        if line.startswith('## '):
            build = 'base' if line.split()[1] == 'base' else 'streamed'
            continue
        x = line.split()
        if line.startswith('#') or len(x) < 20 or x[0] != 'all_to_all':
            continue
        pool.setdefault(int(x[2]), {}).setdefault(build, []).append(float(x[-4]))
for size in sorted(pool):
    row = pool[size]
    print(f"all_to_all {size:>9}: " + "  ".join(
        f"{b} x{statistics.median(v):.2f} ({len(v)} launches)" for b, v in sorted(row.items())))
