"""Times the session snapshot when nothing changed: State.save() of a
namespace holding 4 MiB of pickled values and a 32 MiB spilled string,
called again after a save. Prints the median in ms as JSON.
python snapshot.py PACKAGE_DIR FOLDER RUNS
"""

import json
import statistics
import sys
import time

sys.path.insert(0, sys.argv[1])
from vis_sandbox.state import State  # noqa: E402

state = State(sys.argv[2])
ns = {f"v{i}": list(range(i * 10, i * 10 + 80000)) for i in range(8)}
ns["big"] = "s" * (32 << 20)
src = "\n".join(f"v{i} = list(range({i * 10}, {i * 10 + 80000}))" for i in range(8)) + "\nbig = 's' * (32 << 20)\n"
state.after_block(ns, src, 1)
first = state.save(ns)
times = []
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()
    r = state.save(ns)
    times.append(time.perf_counter() - t)
    assert not r["changed"], r
print(json.dumps({"unchanged_save_ms": statistics.median(times) * 1000, "bytes": first.get("bytes", 0)}))
