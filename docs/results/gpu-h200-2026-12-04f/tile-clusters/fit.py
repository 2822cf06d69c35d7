import collections, itertools, math, sys
d=collections.defaultdict(dict)
cur=None
for l in open(__import__("os").path.dirname(__file__) + "/raw.txt"):
    if l.startswith('== '):
        cur=l.split('/')[-1].strip()[:-4].split('-',1)[1]; continue
    p=l.split()
    if len(p)>=10 and p[0]=='bf16':
        d[p[1]][cur]=float(p[7])
SMS=132
tiles={'t256':(128,256,1.0),'t192sq':(192,192,1.0),'t192':(128,192,0.94),'t192x128':(192,128,0.92),'t128':(128,128,0.80)}
FLOOR=0.3
def est(m,n,k,bm,bn,rate,c):
    rows=-(-m//bm); cols=-(-n//bn)
    if c==2:
        if bn>=bm: rows=-(-rows//2)*2
        else: cols=-(-cols//2)*2
    t=rows*cols
    if t>SMS and t%SMS: w=t//SMS+FLOOR+(1-FLOOR)*(t%SMS)/SMS
    else: w=-(-t//SMS)
    return w*bm*bn/rate
def pick(m,n,k,g,kmin,allowed):
    best=None
    for name,(bm,bn,r) in tiles.items():
        for c in (1,2):
            if c==2 and (k<=kmin or name not in g): continue
            rr=r*(g.get(name,1) if c==2 else 1)
            e=est(m,n,k,bm,bn,rr,c)
            v='%sc%d'%(name,c)
            if v not in allowed: continue
            if best is None or e<best[0]: best=(e,v)
    return best[1]
def score(g,kmin,shapes,verbose=False):
    loss=0;under=0;n=0;vals=[]
    for s in shapes:
        m,nn,k=map(int,s.split('x'))
        vv=d[s]
        allowed=set(vv)
        v=pick(m,nn,k,g,kmin,allowed)
        best=max(x for kk,x in vv.items() if kk!='def')
        got=vv[v]
        vals.append(got)
        loss+=math.log(best/got); n+=1
        if got<0.75: under+=1
        if verbose: print('%-16s %-12s %.3f best %.3f def %.3f'%(s,v,got,best,vv['def']))
    gm=math.exp(sum(math.log(x) for x in vals)/n)
    return loss/n, under, gm
shapes=[s for s in d if 't128c1' in d[s]]
shapes_all=list(d)
print('n',len(shapes),len(shapes_all))
# baseline: current rule approximated: default col
defv=[d[s]['def'] for s in shapes_all]
print('def under', sum(x<0.75 for x in defv), 'gm', math.exp(sum(map(math.log,defv))/len(defv)))
print('no clusters', score({},99999,shapes_all))
res=[]
grid=[1.0,1.05,1.1,1.15,1.2,1.25,1.3]
for kmin in (1024,1536,2048):
  for g256,g192sq,g192,g192x128 in itertools.product(grid,repeat=4):
    g={'t256':g256,'t192sq':g192sq,'t192':g192,'t192x128':g192x128}
    sc=score(g,kmin,shapes_all)
    res.append((sc[0],sc,kmin,g))
res.sort(key=lambda x:x[0])
for r in res[:15]: print(r[1],r[2],r[3])
print()
g={'t256':1.05,'t192sq':1.05,'t192':1.05,'t192x128':1.05}
score(g,2048,shapes_all,True)
