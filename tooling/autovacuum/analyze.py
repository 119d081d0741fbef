#!/usr/bin/env python3
# tooling/autovacuum/analyze.py NAME SERVER_LOG: a run of run.sh read back:
# its autovacuums (from the server's log, log_autovacuum_min_duration = 0),
# the peaks of n_dead_tup and n_ins_since_vacuum (its samples), the
# statements' latencies (pgbench's log, less the schedule lag) while a
# vacuum ran and otherwise, minute by minute, and the vacuums' work (buffers,
# WAL, index passes) per table; CUT=S counts only the autovacuums that
# started before S seconds (the manual VACUUM's instant, for totals over the
# same rows).
import sys, re, glob, os, datetime as dt
name = sys.argv[1]
out = os.path.join(os.environ.get("AV_OUT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../.data/autovacuum")), name)
db = f"av_{name}"
def ts(s):
    s = s.strip().replace('Z', '')
    return dt.datetime.fromisoformat(s).replace(tzinfo=dt.timezone.utc).timestamp()
start, end = ts(open(f"{out}/start").read()), ts(open(f"{out}/end").read())
log = open(sys.argv[2]).read().split('\n')
vacs = []
cur = None
for line in log:
    m = re.match(r'(\S+ \S+) UTC \[\d+\] LOG:  automatic (vacuum|analyze) of table "([^"]+)"(.*)', line)
    if m:
        if cur: vacs.append(cur)
        t = dt.datetime.strptime(m.group(1), '%Y-%m-%d %H:%M:%S.%f').replace(tzinfo=dt.timezone.utc).timestamp()
        cur = None
        if m.group(3).startswith(db + '.') and start - 5 <= t <= end + 60:
            cur = dict(end=t, kind=m.group(2), table=m.group(3).split('.')[-1], text=m.group(4))
        continue
    if cur is not None:
        if line.startswith('\t') or line.startswith(' '):
            cur['text'] += '\n' + line
        else:
            vacs.append(cur); cur = None
if cur: vacs.append(cur)
rows = []
for v in vacs:
    e = re.search(r'elapsed: ([\d.]+) s', v['text'])
    v['elapsed'] = float(e.group(1)) if e else 0
    v['start'] = v['end'] - v['elapsed']
    g = lambda p: (re.search(p, v['text']) or [None, None])[1]
    v['scans'] = g(r'index scans: (\d+)')
    v['scanned'] = g(r'(\d+) scanned')
    v['remain'] = g(r'(\d+) remain,')
    v['removed'] = g(r'tuples: (\d+) removed')
    v['bypass'] = 'bypass' in v['text'] or 'not needed' in v['text']
    v['lpdead'] = g(r'(\d+) pages from table \([\d.]+% of total\) had (\d+) dead item')
    m2 = re.search(r'(\d+) pages from table \(([\d.]+)% of total\) had (\d+) dead item identifiers removed', v['text'])
    m3 = re.search(r'index scan (not needed|bypassed): (\d+) pages from table \(([\d.]+)% of total\) have (\d+) dead', v['text'])
    v['dead_items'] = (m2.group(3)+' removed' if m2 else (m3.group(4)+' left, '+m3.group(1) if m3 else ''))
    v['wal'] = g(r'WAL usage: \d+ records, \d+ full page images, (\d+) bytes')
print(f"== {name}: {len(vacs)} autovacuum/analyze runs in {end-start:.0f} s")
print("| t (s) | table | kind | elapsed s | index scans | heap pages scanned / total | tuples removed | dead items | WAL MB |")
print("|---|---|---|---|---|---|---|---|---|")
for v in sorted(vacs, key=lambda v: v['start']):
    if v['kind'] == 'vacuum':
        print(f"| {v['start']-start:.0f} | {v['table']} | {v['kind']} | {v['elapsed']:.2f} | {v['scans']} | {v['scanned']} / {v['remain']} | {v['removed']} | {v['dead_items']} | {int(v['wal'] or 0)/1e6:.1f} |")
    else:
        print(f"| {v['start']-start:.0f} | {v['table']} | analyze | {v['elapsed']:.2f} | | | | | |")
tot = {}
for v in vacs:
    if v['kind'] == 'vacuum':
        tot.setdefault(v['table'], [0, 0.0]); tot[v['table']][0] += 1; tot[v['table']][1] += v['elapsed']
print("totals (vacuums, seconds):", tot)
# peaks
peaks = {}
for line in open(f"{out}/samples.txt"):
    f = line.split()
    if len(f) == 7 and f[1] != 'progress':
        t, rel, live, dead, ins = float(f[0]), f[1], int(f[2]), int(f[3]), int(f[4])
        p = peaks.setdefault(rel, [0, 0])
        p[0] = max(p[0], dead); p[1] = max(p[1], ins)
print("peak n_dead_tup, n_ins_since_vacuum:", peaks)
# manual vacuum windows
manual = []
try:
    mv = {}
    for line in open(f"{out}/vacuum-manual.txt"):
        m = re.match(r'(\w+) (start|end) (\S+)', line)
        if m: mv.setdefault(m.group(1), {})[m.group(2)] = ts(m.group(3))
    for t, w in mv.items():
        if 'end' in w:
            manual.append((w['start'], w['end'], t))
            print(f"manual VACUUM {t}: {w['end']-w['start']:.1f} s at t={w['start']-start:.0f}")
except FileNotFoundError:
    pass
windows = [(v['start'], v['end']) for v in vacs if v['kind'] == 'vacuum'] + [(a, b) for a, b, _ in manual]
lat = {}
for fn in glob.glob(f"{out}/lat.*"):
    for line in open(fn):
        f = line.split()
        if len(f) < 7: continue
        script, epoch, us, latency, lag = int(f[3]), int(f[4]), int(f[5]), int(f[2]), int(f[6])
        t = epoch + us / 1e6
        tstart = t - latency / 1e6
        invac = any(a <= t and tstart <= b for a, b in windows)
        lat.setdefault((script, invac), []).append((latency - lag) / 1000)
def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(p * len(xs)))]
names = {0: 'pix (9 statements)', 1: 'claim walks', 2: 'credits read'}
print("| script | while a vacuum runs: n, p50, p99, max ms | otherwise: n, p50, p99, max ms |")
print("|---|---|---|")
for s in (0, 1, 2):
    cells = []
    for invac in (True, False):
        xs = lat.get((s, invac), [])
        cells.append(f"{len(xs)}, {q(xs,.5):.1f}, {q(xs,.99):.1f}, {max(xs):.0f}" if xs else "0")
    print(f"| {names[s]} | {cells[0]} | {cells[1]} |")
# per minute: claim walk p50/p99 (exec ms), pix p99, and the inbox's n_dead_tup at the minute's end
recs = []
for fn in glob.glob(f"{out}/lat.*"):
    for line in open(fn):
        f = line.split()
        if len(f) < 7: continue
        recs.append((int(f[4]) + int(f[5]) / 1e6 - start, int(f[3]), (int(f[2]) - int(f[6])) / 1000))
dead = {}
for line in open(f"{out}/samples.txt"):
    f = line.split()
    if len(f) == 7 and f[1] == 'inbox_messages':
        dead[int((float(f[0]) - start) // 60)] = f[3]
print("| minute | claim p50 | claim p99 | pix p50 | pix p99 | read p99 | inbox n_dead_tup |")
print("|---|---|---|---|---|---|---|")
for mnt in range(int((end - start) // 60) + 1):
    c = [x for t, s_, x in recs if s_ == 1 and mnt * 60 <= t < mnt * 60 + 60]
    p = [x for t, s_, x in recs if s_ == 0 and mnt * 60 <= t < mnt * 60 + 60]
    r = [x for t, s_, x in recs if s_ == 2 and mnt * 60 <= t < mnt * 60 + 60]
    if c and p and r:
        print(f"| {mnt} | {q(c,.5):.1f} | {q(c,.99):.1f} | {q(p,.5):.1f} | {q(p,.99):.1f} | {q(r,.99):.1f} | {dead.get(mnt,'')} |")
# the work of the vacuums: buffer hits, misses, dirtied, WAL bytes and FPIs, index passes, per table
def work(text):
    b = re.search(r'buffer usage: (\d+) hits, (\d+) misses, (\d+) dirtied', text)
    w = re.search(r'WAL usage: (\d+) records, (\d+) full page images, (\d+) bytes', text)
    s = re.search(r'index scans: (\d+)', text)
    d = re.search(r'had (\d+) dead item identifiers removed', text)
    e = re.search(r'elapsed: ([\d.]+) s', text)
    return [int(b.group(1)), int(b.group(2)), int(b.group(3)), int(w.group(2)), int(w.group(3)), int(s.group(1)) if s else 0, int(d.group(1)) if d else 0, float(e.group(1)), 1] if b and w else None
sums = {}
for v in vacs:
    if v['kind'] != 'vacuum': continue
    if v['start'] - start >= float(os.environ.get('CUT', '1e9')): continue
    x = work(v['text'])
    if x: sums[('auto', v['table'])] = [a + b for a, b in zip(sums.get(('auto', v['table']), [0]*9), x)]
try:
    txt = open(f"{out}/vacuum-manual.txt").read()
    for part in re.split(r'INFO:  finished vacuuming "', txt)[1:]:
        tbl = part.split('"')[0].split('.')[-1]
        if tbl.startswith('pg_toast'): continue
        x = work(part)
        if x: sums[('manual', tbl)] = x
except FileNotFoundError:
    pass
print("| vacuum | table | runs | index passes | dead items removed | hits | misses | dirtied | FPIs | WAL MB | elapsed s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for (k, t), x in sorted(sums.items()):
    print(f"| {k} | {t} | {x[8]} | {x[5]} | {x[6]} | {x[0]} | {x[1]} | {x[2]} | {x[3]} | {x[4]/1e6:.1f} | {x[7]:.1f} |")
