"""Tests of vis_sandbox.modules: changed sources named once, their bytecode
dropped, and reload() of a package with the session's names rebound."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vis_sandbox import modules  # noqa: E402


class ModulesTest(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.realpath(tempfile.mkdtemp())
        os.makedirs(os.path.join(self.dir, "vistestpkg"))
        self.write("vistestpkg/__init__.py", "from .core import Thing, VALUE\n")
        self.write("vistestpkg/core.py", "VALUE = 1\nclass Thing:\n    pass\n")
        sys.path.insert(0, self.dir)
        self.addCleanup(sys.path.remove, self.dir)
        self.addCleanup(lambda: [sys.modules.pop(n) for n in list(sys.modules) if n.startswith("vistestpkg")])

    def write(self, rel, text, mtime_ns=None):
        path = os.path.join(self.dir, rel)
        with open(path, "w") as f:
            f.write(text)
        if mtime_ns is not None:
            os.utime(path, ns=(mtime_ns, mtime_ns))
        return path

    def test_a_changed_module_is_named_once_and_its_bytecode_dropped(self):
        import importlib.util

        import vistestpkg

        watch = modules.Watch([self.dir])
        self.assertEqual(watch.changed(), [])
        core = vistestpkg.core.__file__
        cached = importlib.util.cache_from_source(core)
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        open(cached, "wb").close()
        st = os.stat(core)
        self.write("vistestpkg/core.py", "VALUE = 2\nclass Thing:\n    pass\n", st.st_mtime_ns + 1)
        self.assertEqual(watch.changed(), [("vistestpkg.core", core)])
        self.assertFalse(os.path.exists(cached))
        self.assertEqual(watch.changed(), [])
        text = modules.note([("vistestpkg.core", core)], self.dir)
        self.assertIn("vistestpkg/core.py changed on disk since vistestpkg.core was imported: reload('vistestpkg')", text)

    def test_modules_outside_the_roots_are_not_watched(self):
        import vistestpkg  # noqa: F401

        watch = modules.Watch([tempfile.gettempdir() + "/elsewhere"])
        watch.changed()
        self.assertEqual(watch.seen, {})

    def test_reload_imports_afresh_and_rebinds(self):
        import vistestpkg

        ns = {"vistestpkg": vistestpkg, "Thing": vistestpkg.Thing, "old": vistestpkg.Thing(), "n": 3}
        self.write("vistestpkg/core.py", "VALUE = 2\nclass Thing:\n    pass\n")
        r = modules.reload("vistestpkg", ns)
        self.assertEqual(ns["vistestpkg"].VALUE, 2)
        self.assertIs(ns["Thing"], sys.modules["vistestpkg.core"].Thing)
        self.assertIsNot(type(ns["old"]), ns["Thing"])
        self.assertEqual(sorted(r.rebound), ["Thing", "vistestpkg"])
        self.assertIn("reloaded vistestpkg: 2 modules imported afresh", repr(r))
        # what was imported afresh is watched again
        watch = modules.watch = modules.Watch([self.dir])
        self.addCleanup(setattr, modules, "watch", None)
        watch.changed()
        modules.reload("vistestpkg", ns)
        watch.changed()
        core = sys.modules["vistestpkg.core"].__file__
        self.write("vistestpkg/core.py", "VALUE = 33\nclass Thing:\n    pass\n", os.stat(core).st_mtime_ns + 1)
        self.assertEqual(watch.changed(), [("vistestpkg.core", core)])

    def test_a_reload_that_fails_keeps_the_old_package(self):
        import vistestpkg

        self.write("vistestpkg/core.py", "VALUE = (\n")
        with self.assertRaises(SyntaxError):
            modules.reload("vistestpkg", {})
        self.assertIs(sys.modules["vistestpkg"], vistestpkg)
        with self.assertRaisesRegex(ValueError, "is not imported"):
            modules.reload("vistestpkg_nothing", {})
        with self.assertRaises(TypeError):
            modules.reload(3, {})


if __name__ == "__main__":
    unittest.main()
