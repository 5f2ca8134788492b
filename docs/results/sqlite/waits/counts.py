import sys, re, collections
agg=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sys.argv[1:]:
    for l in open(f):
        r=l.rstrip('\n').split('\t')
        if r[2]=='stock': continue
        wp={}
        for part in r[7].split(' | '):
            m=re.match(r'(wait|codec)\s+(\S+)\s+(.*)',part.strip())
            if not m: continue
            kv=dict(x.split('=') for x in m.group(3).split())
            wp[m.group(1)+' '+m.group(2)]=kv
        for k in ['wait full','wait settle','wait drop','wait free','codec pack_now','codec unpack','codec slotcopy','codec skipped']:
            kv=wp.get(k,{})
            agg[(r[1],r[2])][k].append(kv)
for (op,c),d in sorted(agg.items()):
    n=len(d['wait full'])
    out=[]
    for k,lst in d.items():
        tot=lambda f: sum(float(kv.get(f,0)) for kv in lst)/n
        if k.startswith('wait'):
            out.append(f"{k[5:]}: n={tot('n'):.0f} helped={tot('helped'):.0f} sleeps={tot('sleeps'):.0f} wall={tot('wall_ms'):.1f}ms cpu={tot('cpu_ms'):.1f}ms")
        else:
            out.append(f"{k[6:]}: n={tot('n'):.0f} cpu={tot('cpu_ms'):.1f}ms")
    print(f"{op} {c} (runs {n}, means):\n   "+"\n   ".join(out))
