# The shapes whose pick the committed rule (thr 132) moves against the rule before,
# with their measured ratios (run beside fit.py).
import json
exec(open('fit.py').read().split("alld = {}")[0])
alld = {}
for n in sets: alld.update(sets[n])
newP = ({'128x256/2': 1.0, '192x192/3': 1.0, '128x192/2': 0.94, '192x128/3': 0.92, '128x128/2': 0.8, '64x128/1': 0.55}, 0.3, 132)
curP = ({'128x256/2': 1.0, '192x192/3': 0.94, '128x192/2': 0.93, '192x128/3': 0.92, '128x128/2': 0.85, '64x128/1': 0.55}, 1.0, 0)
worse, better = [], []
for s, r in alld.items():
    sh = tuple(map(int, s.split('x'))); c = [t for t in tiles if t in r]
    if len(c) < 2: continue
    po = min(c, key=lambda t: est(t, sh, *curP)); pn = min(c, key=lambda t: est(t, sh, *newP))
    if r[pn] < r[po]*0.99: worse.append('%s %s %.3f -> %s %.3f' % (s, po, r[po], pn, r[pn]))
    if r[pn] > r[po]*1.01: better.append('%s %s %.3f -> %s %.3f' % (s, po, r[po], pn, r[pn]))
print('worse', len(worse)); print('\n'.join(worse)); print('better', len(better)); print('\n'.join(better))
