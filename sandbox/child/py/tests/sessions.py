"""What the tests of the snapshot's modules share: a session run as the
driver runs it, a test case with a fresh session folder, a child process
that restores and runs blocks, and the spill files of a folder. Run as a
script with a JSON spec, it is that child."""

import json
import linecache
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
if PKG_ROOT not in sys.path:  # when a test runs this file as a fresh interpreter
    sys.path.insert(0, PKG_ROOT)

from vis_sandbox import changes  # noqa: E402
from vis_sandbox.notices import notice  # noqa: E402
from vis_sandbox.state import State  # noqa: E402

MiB = 1 << 20


class Session:
    """Runs blocks as the driver does: in one namespace that is __main__'s
    dict, each block compiled as "<block N>" with its text in linecache."""

    def __init__(self, folder, protected=frozenset(), **limits):
        self.module = types.ModuleType("__main__")
        self.ns = self.module.__dict__
        self.state = State(folder, protected, **limits)
        self._old_main = sys.modules["__main__"]
        sys.modules["__main__"] = self.module
        self.error = None

    def close(self):
        sys.modules["__main__"] = self._old_main

    def run(self, src, save=True, names=False):
        """Runs src; names=True hands after_block the code's names, as the
        driver does."""
        src = textwrap.dedent(src)
        n = self.state.next_block
        fn = f"<block {n}>"
        linecache.cache[fn] = (len(src), None, src.splitlines(True), fn)
        self.error = None
        code = None
        try:
            code = compile(src, fn, "exec")
            exec(code, self.ns)
        except Exception as e:
            self.error = e
        found = None
        if names and code is not None:
            found = set()
            changes.code_names(code, found)
        self.state.after_block(self.ns, src, n, found)
        return self.state.save(self.ns) if save else None

    def restore(self, drop=()):
        return self.state.restore(self.ns, drop)


class Case(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.folder = os.path.join(self.tmp.name, "session")
        self.sessions = []

    def tearDown(self):
        for s in reversed(self.sessions):
            s.close()
        self.tmp.cleanup()

    def session(self, protected=frozenset(), **limits):
        """A new session on the same folder: an in-process restart."""
        if self.sessions:
            self.sessions[-1].close()
        s = Session(self.folder, protected, **limits)
        self.sessions.append(s)
        return s


def child_main(spec):
    """Runs in a fresh interpreter: restore (optionally), run blocks, report."""
    s = Session(spec["folder"])
    out = {}
    if spec.get("restore"):
        t = time.perf_counter()
        report = s.restore()
        out["restore_ms"] = (time.perf_counter() - t) * 1e3
        out["report"] = report
        out["notice"] = notice("the host was stopped", report)
    out["saves"] = [s.run(b) for b in spec.get("blocks", [])]
    out["evals"] = {}
    for expr in spec.get("evals", []):
        try:
            out["evals"][expr] = repr(eval(expr, s.ns))
        except Exception:
            import traceback
            out["evals"][expr] = traceback.format_exc()
    return out


def run_child(spec, timeout=120):
    proc = subprocess.run([sys.executable, "-B", os.path.abspath(__file__), json.dumps(spec)],
                          cwd=PKG_ROOT, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"child failed: {proc.stderr}")
    return json.loads(proc.stdout)


def spill_files(folder):
    try:
        return sorted(os.listdir(os.path.join(folder, "spill")))
    except FileNotFoundError:
        return []


if __name__ == "__main__":
    print(json.dumps(child_main(json.loads(sys.argv[1]))))
