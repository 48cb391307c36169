"""Times the snapshot with data in it, as sandboxbench reports it (issue 21).
Run with a python that has numpy and pandas:
python data.py PACKAGE_DIR FOLDER RUNS

- save: State.save() after a block that binds a new name (so the snapshot
  is written again) and does not name a 200 MB array, in a session
  holding that array, and in an empty session, taken alternately; and
  after a block that does not change anything (the unchanged path);
- restore: State.restore() of a snapshot holding a 15 MB data frame (100k
  rows), pandas imported before (its import is timed apart), in a new
  State each time, and pickle.loads of the frame's in-band pickle for
  reference.

Prints one JSON object, times in ms (medians).
"""

import json
import os
import pickle
import statistics
import sys
import time
import types

sys.path.insert(0, sys.argv[1])
from vis_sandbox.state import State  # noqa: E402

folder, runs = sys.argv[2], int(sys.argv[3])


def session(name):
    module = types.ModuleType("__main__")
    sys.modules["__main__"] = module
    return State(os.path.join(folder, name)), module.__dict__


def block(state, ns, src):
    """Runs src as a block and times the save after it."""
    code = compile(src, f"<block {state.next_block}>", "exec")
    exec(code, ns)
    names = set(code.co_names)
    t = time.perf_counter()
    state.after_block(ns, src, state.next_block, names)
    r = state.save(ns)
    return time.perf_counter() - t, r


t = time.perf_counter()
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import_ms = (time.perf_counter() - t) * 1000

big_state, big_ns = session("big")
block(big_state, big_ns, "import numpy as np\nbig = np.arange(25_000_000, dtype=np.float64)\n")
empty_state, empty_ns = session("empty")
block(empty_state, empty_ns, "pass\n")
changed = {"big": [], "empty": []}
unchanged = {"big": [], "empty": []}
for i in range(runs + 3):
    for name, (state, ns) in (("big", (big_state, big_ns)), ("empty", (empty_state, empty_ns)))[::1 if i % 2 else -1]:
        d, r = block(state, ns, f"x{i} = {i}\n")
        assert r["changed"], r
        d2, r2 = block(state, ns, f"x{i} = {i}\n")
        assert not r2["changed"], r2
        if i >= 3:
            changed[name].append(d * 1000)
            unchanged[name].append(d2 * 1000)
assert "big" in big_state.variables(big_ns) and big_state.variable_status("big", big_ns["big"])[0]

n = 100_000
rng = np.random.default_rng(7)
df = pd.DataFrame({f"f{i}": rng.random(n) for i in range(10)})
df["id"] = np.arange(n)
df["name"] = [f"customer {i:06d}" for i in range(n)]
frame_mb = df.memory_usage(deep=True).sum() / 1e6
frame_state, frame_ns = session("frame")
frame_ns["pd"] = pd
frame_ns["df"] = df
frame_state.after_block(frame_ns, "df = df\n", 1)
assert frame_state.save(frame_ns)["changed"]
restore = []
for _ in range(runs):
    state, ns = session("frame")
    t = time.perf_counter()
    report = state.restore(ns)
    restore.append((time.perf_counter() - t) * 1000)
    assert report["variables"] == ["df"] and not report["lost"], report
    assert ns["df"].equals(df)
data = pickle.dumps(df, protocol=5)
loads = []
for _ in range(runs):
    t = time.perf_counter()
    pickle.loads(data)
    loads.append((time.perf_counter() - t) * 1000)

median = statistics.median
print(json.dumps({
    "changed_save_big_ms": median(changed["big"]), "changed_save_empty_ms": median(changed["empty"]),
    "unchanged_save_big_ms": median(unchanged["big"]), "unchanged_save_empty_ms": median(unchanged["empty"]),
    "frame_mb": frame_mb, "restore_frame_ms": median(restore), "pickle_loads_ms": median(loads),
    "import_numpy_pandas_ms": import_ms, "numpy": np.__version__, "pandas": pd.__version__,
}))
