# What the notes of written files cost a block, run as a sandbox block:
#   bin/vis-agent sandbox run --session bench sandbox/child/py/bench/write_notes.py
# (and the same with a build without them, to compare: a build before
# them has no take). Prints the median of 9 runs of: 10^6 id() calls
# (each raises the "builtins.id" audit event: the C hooks see every
# event), 10^4 opens of a file for writing (each noted), and the driver's
# take of the notes after a block.
import time

try:
    from vis_sandbox.checks import take_written as take
except ImportError:
    take = None


def median(f, runs=9):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def events():
    for i in range(10**6):
        id(i)


def opens():
    for _ in range(10**4):
        open("bench-notes.py", "w").close()


print(f"an audit event (id()):          {median(events) * 1e3:8.1f} ns")
print(f"an open for writing, noted:     {median(opens) * 1e2:8.2f} µs")
if take:
    take()
    print(f"the take after a block:         {median(take, 101) * 1e6:8.2f} µs")
os.remove("bench-notes.py")
