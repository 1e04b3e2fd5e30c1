import re,statistics as st,collections,sys
d=collections.defaultdict(list); v=None
for line in open(sys.argv[1]):
    if line.startswith('## '): v=line[3:].strip(); continue
    if line.startswith('#') or '|' not in line: continue
    f=line.split('|'); h=f[0].split()
    coll,b=h[0],int(h[2]); oop=float(f[1].split()[0]); ip=float(f[2].split()[0]); mpi=float(f[3].split()[0])
    d[(coll,b,v)].append((oop,ip,mpi))
for (coll,b,v),xs in sorted(d.items()):
    print(f"{coll:11s} {b>>20:3d}M {v:5s} oop {st.median(x[0] for x in xs):8.0f} ip {st.median(x[1] for x in xs):8.0f} mpi {st.median(x[2] for x in xs):8.0f}  mpi range {min(x[2] for x in xs):.0f}-{max(x[2] for x in xs):.0f}")
