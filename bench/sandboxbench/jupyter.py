"""Times a Jupyter kernel as sandboxbench compares it: the round trip of
executing `x = 1` on a warm kernel, and a kernel restart until it is ready.
Prints one JSON object. Run with a python that has jupyter_client and
ipykernel: python jupyter.py ROUNDTRIPS RESTARTS
"""

import json
import statistics
import sys
import time

from jupyter_client.manager import start_new_kernel


def main():
    roundtrips, restarts = int(sys.argv[1]), int(sys.argv[2])
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        for _ in range(20):
            kc.execute_interactive("x = 1", timeout=30)
        rt = []
        for _ in range(roundtrips):
            t = time.perf_counter()
            kc.execute_interactive("x = 1", timeout=30)
            rt.append(time.perf_counter() - t)
        rs = []
        for _ in range(restarts):
            t = time.perf_counter()
            km.restart_kernel(now=True)
            kc.wait_for_ready(timeout=60)
            rs.append(time.perf_counter() - t)
        print(json.dumps({"roundtrip_ms": statistics.median(rt) * 1000,
                          "roundtrip_p90_ms": sorted(rt)[int(len(rt) * 0.9)] * 1000,
                          "restart_ms": statistics.median(rs) * 1000}))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


main()
