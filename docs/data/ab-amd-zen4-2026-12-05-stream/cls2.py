# rows: bin ppX coll bytes rf mpi ratio. A launch = a run of rows of one bin; its mode from
# Open MPI's 1 MiB allgather in it (fast < 80 us), else from the ping-pong before it (< 200 ns).
import sys, statistics as st, collections
rows=[l.split() for f in sys.argv[1:] for l in open(f) if len(l.split())>=7]
launches=[]; cur=[]
for r in rows:
    if cur and (r[0]!=cur[-1][0] or r[1]!=cur[-1][1] or (r[2]==cur[-1][2] and int(r[3])<=int(cur[-1][3]))):
        launches.append(cur); cur=[]
    cur.append(r)
if cur: launches.append(cur)
d=collections.defaultdict(list)
for L in launches:
    ag=[float(r[5]) for r in L if r[2]=='allgather' and r[3]=='1048576']
    mode = ('fast' if ag[0]<80 else 'slow') if ag else ('fast' if int(L[0][1][2:])<200 else 'slow')
    for r in L: d[(r[2],int(r[3]),mode,r[0])].append(float(r[6]))
keys=sorted(set(k[:3] for k in d)); bins=sorted(set(k[3] for k in d))
for k in keys:
    print(f"{k[0]:11s} {k[1]:>9d} {k[2]}  ", "  ".join(f"{b}: {st.median(d[k+(b,)]):.2f} ({len(d[k+(b,)])}: {min(d[k+(b,)]):.2f}-{max(d[k+(b,)]):.2f})" if d.get(k+(b,)) else f"{b}: -" for b in bins))
