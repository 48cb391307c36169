"""Tests of vis_sandbox.standby: which modules a standby imports ahead, and
how it tells that one changed on disk since (the standby's life runs through
the built binary: cmd/vis-agent/sandbox_standby_test.go)."""

import os
import sys
import tempfile
import time
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vis_sandbox import standby  # noqa: E402
from vis_sandbox import state as _state  # noqa: E402


class PreloadTest(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.realpath(tempfile.mkdtemp())
        self.ws = os.path.join(self.dir, "ws")
        self.env = os.path.join(self.dir, "env", "site-packages")
        os.makedirs(self.ws)
        os.makedirs(self.env)
        path = list(sys.path)
        self.addCleanup(setattr, sys, "path", path)
        sys.path[:0] = [self.ws, self.env]
        self.names = []
        self.addCleanup(lambda: [sys.modules.pop(n, None) for n in self.names])

    def write(self, folder, name, text):
        self.names.append(name)
        with open(os.path.join(folder, name + ".py"), "w") as f:
            f.write(text)
        return os.path.join(folder, name + ".py")

    def test_imports_third_party_only(self):
        self.write(self.env, "vis_tp_env", "X = 1\n")
        self.write(self.ws, "vis_tp_ws", "raise SystemExit('workspace code ran')\n")
        venv = os.path.join(self.ws, ".venv", "lib", "site-packages")
        os.makedirs(venv)
        sys.path.append(venv)
        self.write(venv, "vis_tp_venv", "Y = 2\n")
        self.write(self.env, "vis_tp_raises", "raise ValueError('no')\n")
        sigs = standby.preload(["vis_tp_env", "vis_tp_ws", "vis_tp_venv", "vis_tp_raises", "json", "no_such_mod",
                                "not an identifier", 7], self.ws)
        self.assertIn("vis_tp_env", sys.modules)
        self.assertIn("vis_tp_venv", sys.modules)  # a project's environment
        self.assertNotIn("vis_tp_ws", sys.modules)  # the workspace's own code never runs
        self.assertNotIn("vis_tp_raises", sys.modules)
        self.assertEqual(sorted(os.path.basename(p) for p in sigs), ["vis_tp_env.py", "vis_tp_venv.py"])
        self.assertIsNone(standby.stale(sigs))

    def test_a_failed_import_leaves_no_half_package(self):
        pkg = os.path.join(self.env, "vis_tp_half")
        os.makedirs(pkg)
        self.names += ["vis_tp_half", "vis_tp_half.first"]
        with open(os.path.join(pkg, "__init__.py"), "w") as f:
            f.write("from . import first\nraise ImportError('a refused import, as a jail may')\n")
        with open(os.path.join(pkg, "first.py"), "w") as f:
            f.write("A = 1\n")
        standby.preload(["vis_tp_half"], self.ws)
        self.assertNotIn("vis_tp_half", sys.modules)
        self.assertNotIn("vis_tp_half.first", sys.modules)

    def test_a_changed_file_is_stale(self):
        path = self.write(self.env, "vis_tp_change", "X = 1\n")
        sigs = standby.preload(["vis_tp_change"], self.ws)
        self.assertIsNone(standby.stale(sigs))
        with open(path, "w") as f:
            f.write("X = 22\n")
        t = time.time() + 10
        os.utime(path, (t, t))
        self.assertEqual(standby.stale(sigs), path)
        os.remove(path)
        self.assertEqual(standby.stale(sigs), path)

    def test_the_snapshot_names_what_its_values_need(self):
        self.write(self.env, "vis_tp_types", "class Thing:\n    pass\ndef helper():\n    return 1\n")
        self.write(self.ws, "vis_tp_own", "class Own:\n    pass\n")
        import vis_tp_own
        import vis_tp_types
        folder = tempfile.mkdtemp()
        st = _state.State(folder, workspace=self.ws)
        ns = {"t": vis_tp_types.Thing(), "h": vis_tp_types.helper, "o": vis_tp_own.Own(), "n": 1, "m": types,
              "mod": vis_tp_types}
        st.after_block(ns, "import vis_tp_types as mod\nfrom vis_tp_types import helper as h", 1)
        report = st.save(ns)
        self.assertEqual(report["preload"], ["vis_tp_types"])
        # the quick path of an unchanged save says the same
        self.assertEqual(st.save(ns)["preload"], ["vis_tp_types"])


if __name__ == "__main__":
    unittest.main()
