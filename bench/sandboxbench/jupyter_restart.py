"""Times a Jupyter kernel's restart as an agent lives it: restart the
kernel, wait until it is ready, run the session's setup again (cells of
SETUP_FILE, split at lines "# %%"), then CHECK, the first result. Run with
a python that has jupyter_client, ipykernel and what the setup imports:
python jupyter_restart.py SETUP_FILE CHECK [DESTROY]. It runs the setup
once, prints "ready", then for each line read from stdin does one restart
and prints its time as JSON ({"ms": ...}); end of input ends it. With
DESTROY (a cell that ruins the setup's state, such as a destructive
filter), a round runs DESTROY untimed, then times the way back without a
restart: the setup again, then CHECK.
"""

import json
import os
import sys
import time

from jupyter_client.manager import start_new_kernel


def run_cell(kc, code):
    reply = kc.execute_interactive(code, timeout=600, output_hook=lambda msg: None)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"{code!r}: {reply['content'].get('ename')}: {reply['content'].get('evalue')}")


def main():
    with open(sys.argv[1]) as f:
        cells = f.read().split("\n# %%\n")
    check = sys.argv[2]
    destroy = sys.argv[3] if len(sys.argv) > 3 else ""
    km, kc = start_new_kernel(kernel_name="python3", cwd=os.getcwd())
    try:
        for cell in cells:
            run_cell(kc, cell)
        run_cell(kc, check)
        print("ready", flush=True)
        for _ in sys.stdin:
            if destroy:
                run_cell(kc, destroy)
            t = time.perf_counter()
            if not destroy:
                km.restart_kernel(now=True)
                kc.wait_for_ready(timeout=60)
            for cell in cells:
                run_cell(kc, cell)
            run_cell(kc, check)
            print(json.dumps({"ms": (time.perf_counter() - t) * 1000}), flush=True)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


main()
