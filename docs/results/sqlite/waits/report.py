import sys, math, collections
rows=[l.rstrip('\n').split('\t') for l in open(sys.argv[1])]
ref=sys.argv[2] if len(sys.argv)>2 else 'stock'
d=collections.defaultdict(dict)
for r in rows: d[(r[1],int(r[0]))][r[2]]=(float(r[3]),float(r[4]))
ops=sorted({r[1] for r in rows}); confs=sorted({r[2] for r in rows})
T={2:12.706,3:4.303,4:3.182,5:2.776,6:2.571,7:2.447,8:2.365,9:2.306,10:2.262,11:2.228,12:2.201,13:2.179,14:2.160,15:2.145,16:2.131}
for op in ops:
    for c in confs:
        if c==ref: continue
        lr=[math.log(v[c][0]/v[ref][0]) for (o,_),v in d.items() if o==op and c in v and ref in v]
        n=len(lr)
        if n<2: continue
        m=sum(lr)/n; sd=math.sqrt(sum((x-m)**2 for x in lr)/(n-1)); h=T.get(n,2.0)*sd/math.sqrt(n)
        walls=sorted(v[c][0] for (o,_),v in d.items() if o==op and c in v); rw=sorted(v[ref][0] for (o,_),v in d.items() if o==op and ref in v)
        print(f"{op:8s} {c:8s}/{ref}: {math.exp(m):.3f} [{math.exp(m-h):.3f}, {math.exp(m+h):.3f}] n={n} median {walls[n//2]:.2f} vs {rw[n//2]:.2f}")
