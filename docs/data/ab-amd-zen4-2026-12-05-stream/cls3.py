# rows: bin ppX coll bytes rf mpi ratio ; each row's mode from Open MPI's own time in it
# (fast under 75 us per MiB; rows up to 8 MiB)
import sys, statistics as st, collections
d=collections.defaultdict(list)
for f in sys.argv[1:]:
    for l in open(f):
        p=l.split()
        if len(p)<7: continue
        b,pp,coll,by,rf,mpi,r=p[:7]; by=int(by)
        if by>8*2**20 or by<2**17: continue
        mode='fast' if float(mpi)/(by/2**20) < 75 else 'slow'
        d[(coll,by,mode,b)].append(float(r))
keys=sorted(set(k[:3] for k in d)); bins=sorted(set(k[3] for k in d))
for k in keys:
    print(f"{k[0]:11s} {k[1]:>9d} {k[2]}  ", "  ".join(f"{b}: {st.median(d[k+(b,)]):.2f} ({len(d[k+(b,)])}: {min(d[k+(b,)]):.2f}-{max(d[k+(b,)]):.2f})" if d.get(k+(b,)) else f"{b}: -" for b in bins))
