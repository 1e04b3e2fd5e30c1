import sys, collections
# rows: label pp coll bytes rf mpi ratio, one launch = consecutive rows with the same label
def launches(path):
    cur=None; out=[]
    for l in open(path):
        f=l.split()
        if len(f)!=7: continue
        lab,pp,coll,b,rf,mpi,r=f
        b=int(b)
        if cur is None or cur[0]!=lab or (cur[1] and b<=cur[1][-1][1] and coll==cur[1][-1][0]):
            cur=[lab,[]]; out.append(cur)
        cur[1].append((coll.split('.')[0],b,float(mpi),float(r)))
    return out
res=collections.defaultdict(list)
for path in sys.argv[1:]:
    for lab,rows in launches(path):
        mode=None
        for coll,b,mpi,r in rows:
            mib=b/2**20
            if mib<=8 and mib>=0.5:
                mode='fast' if mpi<75*mib else 'slow'
            elif mib<0.5:
                mode=None
            res[(coll,b,lab,mode)].append(r)
for k in sorted(res, key=lambda k:(k[0],k[1],str(k[3]),k[2])):
    v=sorted(res[k])
    if k[3] is None: continue
    print(f"{k[0]:10s} {k[1]>>10:6d}K {k[3]:4s} {k[2]:6s} n={len(v):2d} x{v[0]:.2f}-{v[-1]:.2f} median {v[len(v)//2]:.2f}")
