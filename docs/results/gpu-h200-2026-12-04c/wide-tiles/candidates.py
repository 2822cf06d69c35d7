# The tiles tried in wide-tiles/: for each shape, BM 128 or 192 and BN a multiple of 16
# up to 256 by the default rule's estimate (waves, a part-filled last wave at 0.3 + 0.7
# fill, x tile area / rate), rates interpolated between the fitted ones. Usage:
#   python3 candidates.py 1576x1952x1464 1024x5000x3000 ...
import sys, math
S=132
def rate(bm,bn):
    if bm==128: pts=[(128,0.80),(192,0.94),(256,1.0)]
    else: pts=[(128,0.92),(192,1.0),(224,1.0)]
    if bn<=pts[0][0]: return pts[0][1]*bn/pts[0][0] if bn<pts[0][0] else pts[0][1]
    for (a,ra),(b,rb) in zip(pts,pts[1:]):
        if a<=bn<=b: return ra+(rb-ra)*(bn-a)/(b-a)
    return pts[-1][1]
def waves(t):
    if t<=S: return 1.0
    full=t//S; f=(t%S)/S
    return full+(0.3+0.7*f if f else 0)
for s in sys.argv[1:]:
    m,n,k=map(int,s.split('x'))
    c=[]
    for bm in (128,192):
        for bn in range(64,257,16):
            if bm==192 and bn>224: continue
            t=math.ceil(m/bm)*math.ceil(n/bn)
            c.append((waves(t)*bm*bn/rate(bm,bn),bm,bn,t))
    c.sort()
    base=[x for x in c if (x[1],x[2]) in ((128,256),(192,192),(128,192),(192,128),(128,128))]
    print(s, ' '.join('%dx%d(%d,%.0f)'%(b,n_,t,e/1000) for e,b,n_,t in c[:4]), '| old best', '%dx%d(%.0f)'%(base[0][1],base[0][2],base[0][0]/1000))
