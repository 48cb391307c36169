# Round trips of the session's host functions, run as a sandbox block:
#   bin/vis-agent sandbox run --session bench sandbox/child/py/bench/host_calls.py
# Prints the median and 90th percentile of each call, after one warm-up.
import time

import _vis_host


def bench(name, f, n):
    f()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    times.sort()
    med, p90 = times[n // 2], times[int(n * 0.9)]
    unit, scale = ("ms", 1e3) if med > 1e-3 else ("µs", 1e6)
    print(f"{name:<34} median {med * scale:8.1f} {unit}, p90 {p90 * scale:8.1f} {unit}  ({n} runs)")


Path("bench-notes.txt").write_text("".join(f"line {i}\n" for i in range(100)))
attach("small", filename="bench-small.txt")
data = bytes(range(256)) * (64 << 12)  # 64 MiB, all byte values
bench("_vis_host.call session (empty op)", lambda: _vis_host.call(b'{"op":"session"}', None), 2000)
bench("cat (100 lines)", lambda: cat("bench-notes.txt"), 500)
bench("get_attachment", lambda: get_attachment("bench-small.txt"), 500)
bench("attach 4 KiB", lambda: attach(data[:4096], filename="bench-4k.bin"), 50)
bench("attach 64 MiB", lambda: attach(data[:(64 << 20) - 1], filename="bench-64m.bin"), 5)
bench("read_attachment 64 MiB", lambda: read_attachment("bench-64m.bin"), 5)
bench("shell('true')", lambda: shell("true"), 50)
