# Summarises an ab.sh log: each binary's median ratio to Open MPI (range) and median time per row.
import sys, statistics, collections
d = collections.defaultdict(list); t = collections.defaultdict(list); bins = []
cur = None
for line in open(sys.argv[1]):
    if line.startswith('## '):
        cur = line.split()[1]
        if cur not in bins: bins.append(cur)
        continue
    if line.startswith('#') or '|' not in line: continue
    f = line.split()
    if f[-2] == '|' and not f[-1].replace('.', '').isdigit(): f = f[:-2]  # the bench's `ran` column
    coll = f[0]
    try:
        size = int(f[2]); ratio = float(f[-2]); tm = float(f[7])
    except Exception: continue
    d[(cur, coll, size)].append(ratio); t[(cur, coll, size)].append(tm)
keys = sorted({(k[1], k[2]) for k in d})
print("%-15s %8s " % ("coll", "bytes") + " ".join("%22s" % b for b in bins))
for c, s in keys:
    row = "%-15s %8d " % (c, s)
    for b in bins:
        r = d.get((b, c, s), [])
        row += "%22s" % ("x%.2f (%.2f-%.2f) %.2fus" % (statistics.median(r), min(r), max(r), statistics.median(t[(b,c,s)])) if r else "-")
    print(row)
