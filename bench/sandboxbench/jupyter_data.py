"""Side by side, medians: a block reading big.shape on a 1M-row frame with two
text columns, and a groupby on a 200k-row frame (plain and through a helper
reading globals()), in a vis-agent session (whole `sandbox run -c` commands)
and a Jupyter kernel (jupyter_client round trips), same CPython, alternating.

Run with a python that has jupyter_client, ipykernel, numpy and pandas, and
VIS_HOME's shared environment of the same CPython holding numpy and pandas:
python jupyter_data.py BIN RUNS [PAUSE]

PAUSE (seconds, default 0) is left idle before each block on both sides:
an agent's time between calls, in which vis-agent saves the session.
"""

import statistics
import subprocess
import sys
import time

from jupyter_client.manager import start_new_kernel

V, runs = sys.argv[1], int(sys.argv[2])
pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
SETUP = '''import pandas as pd, numpy as np
n = 1_000_000
big = pd.DataFrame({"a": np.arange(n), "b": np.random.rand(n), "s": ["row %d" % i for i in range(n)], "t": ["x%d" % (i % 1000) for i in range(n)]})
m = 200_000
mid = pd.DataFrame({"k": np.random.randint(0, 100, m), "x": np.random.rand(m), "s": ["v%d" % (i % 5000) for i in range(m)]})
def by_key():
    g = globals()
    return g["mid"].groupby("k").x.mean()
'''
CASES = {"big.shape": "big.shape", "groupby": "mid.groupby('k').x.mean()", "helper": "by_key()"}

km, kc = start_new_kernel(kernel_name="python3")


def jrun(code):
    time.sleep(pause)
    t = time.perf_counter()
    r = kc.execute_interactive(code, timeout=120, output_hook=lambda m: None)
    assert r["content"]["status"] == "ok", r
    return time.perf_counter() - t


def vrun(code):
    time.sleep(pause)
    t = time.perf_counter()
    subprocess.run([V, "sandbox", "run", "--session", "jb", "-c", code], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


jrun(SETUP)
vrun(SETUP)
for f in (jrun, vrun):
    for c in CASES.values():
        f(c)
res = {k: ([], []) for k in CASES}
for _ in range(runs):
    for k, c in CASES.items():
        res[k][0].append(vrun(c))
        res[k][1].append(jrun(c))
for k, (v, j) in res.items():
    mv, mj = statistics.median(v) * 1000, statistics.median(j) * 1000
    print(f"{k:10s} vis-agent {mv:8.1f} ms  jupyter {mj:8.1f} ms  ratio {mv / mj:5.2f}")
kc.stop_channels()
km.shutdown_kernel(now=True)
subprocess.run([V, "sandbox", "stop", "--session", "jb"], stdout=subprocess.DEVNULL)
