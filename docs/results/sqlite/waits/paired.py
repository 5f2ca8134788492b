# paired.py ROUNDS OPS NAME=EXT,... OUT: one warm-up round (not recorded), then ROUNDS
# rounds of every (operation, configuration) in an order shuffled per round; a line per run
# (round, op, config, wall s, CPU s of the process, load average, output, the WP counters).
import random, subprocess, sys, time, os, json, math, resource
# paired.py ROUNDS OPS CONFIGS(name=ext,...) OUT
rounds=int(sys.argv[1]); ops=sys.argv[2].split(','); confs=[c.split('=',1) for c in sys.argv[3].split(',')]; out=open(sys.argv[4],'a')
random.seed(20261205)
cells=[(o,c) for o in ops for c in confs]
for r in range(-1, rounds):
    order=cells[:]; random.shuffle(order)
    for op,(name,ext) in order:
        os.sync()
        load=os.getloadavg()[0]
        t0=time.monotonic(); ru0=resource.getrusage(resource.RUSAGE_CHILDREN)
        p=subprocess.run(['./runop.sh', ext, op, 'work.db'], capture_output=True, text=True)
        t=time.monotonic()-t0; ru1=resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu=(ru1.ru_utime-ru0.ru_utime)+(ru1.ru_stime-ru0.ru_stime)
        wp=' | '.join(l[3:] for l in p.stderr.splitlines() if l.startswith('WP '))
        if r>=0:
            out.write(f"{r}\t{op}\t{name}\t{t:.3f}\t{cpu:.3f}\t{load:.2f}\t{p.stdout.strip()}\t{wp}\n"); out.flush()
