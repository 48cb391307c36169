# The time the first checked patch() of a 2,000-line Python file adds,
# for files the session did not write: the files are there when its
# Python process starts, which compiles them ahead while idle
# (vis_sandbox.ahead). Run it twice in an empty folder, the session
# stopped in between (a new host and process find the files) and started
# again with an empty block, then left idle a moment:
#   bin/vis-agent sandbox run --session bench sandbox/child/py/bench/patch_first.py
#   bin/vis-agent sandbox stop --session bench
#   bin/vis-agent sandbox run --session bench -c pass; sleep 10
#   bin/vis-agent sandbox run --session bench sandbox/child/py/bench/patch_first.py
# The first run writes 20 pairs of copies of the file (the standard
# library's argparse.py cut to 2,000 lines, as in patch_check.py); the
# second patches each copy twice, a copy of each pair with check=False
# and the other checked, in turn, and prints the medians of both and of
# the 20 differences, for the first edits (the files compiled ahead) and
# the second (the host knows the text it wrote compiles).
import ast
import sysconfig
import time

RUNS = 20

if not Path("plain0.py").exists():
    src = open(os.path.join(sysconfig.get_paths()["stdlib"], "argparse.py"), encoding="utf-8").read()
    end = max(n.end_lineno for n in ast.parse(src).body if n.end_lineno <= 2000)
    lines = src.splitlines(keepends=True)[:end]
    text = "".join(lines + [f"# filler {i}\n" for i in range(2000 - len(lines))])
    for i in range(RUNS):
        Path(f"plain{i}.py").write_text(text)
        Path(f"first{i}.py").write_text(text)
    print(f"wrote {RUNS} pairs of copies; restart the session and run this again")
else:
    try:
        from vis_sandbox.ahead import key_of
    except ImportError:  # a vis-agent that compiles nothing ahead, to compare
        def key_of(path):
            return None

    ready = sum(key_of(f"first{i}.py") is not None for i in range(RUNS))
    print(f"compiled ahead: {ready} of the {RUNS} files")
    line = "    return copy.copy(items)\n"  # in _copy_items, a 10-line function
    # The host calls a patch makes: a checked edit makes two (the host
    # decides and asks for the edited statements compiled; it has the
    # verdict and writes), the second doing what an unchecked one does.
    import vis_sandbox.tools as tools

    host_call, calls = tools.call, []

    def timed(*args):
        t = time.perf_counter()
        try:
            return host_call(*args)
        finally:
            calls.append(time.perf_counter() - t)

    tools.call = timed
    for edit, (old, new) in (("first edit", (line, line.rstrip("\n") + "  # b\n")),
                             ("second edit", (line.rstrip("\n") + "  # b\n", line))):
        unchecked, checked, first_call = [], [], []
        for i in range(RUNS):
            for check, path, into in ((False, f"plain{i}.py", unchecked), (True, f"first{i}.py", checked)):
                calls.clear()
                t = time.perf_counter()
                patch(path, old, new, check=check)
                into.append(time.perf_counter() - t)
            first_call.append(calls[0] if len(calls) > 1 else float("nan"))
        added = sorted(c - u for c, u in zip(checked, unchecked, strict=True))
        for name, times in (("patch(check=False)", sorted(unchecked)), (f"patch(), {edit}", sorted(checked)),
                            (f"added by the check, {edit}", added), (f"  its first host call, {edit}", sorted(first_call))):
            print(f"{name:<34} median {times[len(times) // 2] * 1e3:6.2f} ms, p90 {times[int(len(times) * 0.9)] * 1e3:6.2f} ms")
    tools.call = host_call
