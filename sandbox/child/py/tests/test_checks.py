"""Tests of vis_sandbox.checks: compiling files' bytes, and the notes of
the checked files a session's code writes."""

import os
import pathlib
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vis_sandbox import checks  # noqa: E402


class CompileFileTest(unittest.TestCase):
    def test_valid_and_not(self):
        self.assertIsNone(checks.compile_file(b"x = 1\n", "m.py"))
        err = checks.compile_file(b"x = (1,\ny = 2\n", "m.py")
        self.assertEqual(err["line"], 1)
        self.assertIn("never closed", err["message"])

    def test_read_as_a_file(self):
        # A byte order mark and a coding declaration, as for any file.
        self.assertIsNone(checks.compile_file(b"\xef\xbb\xbfx = 1\n", "m.py"))
        self.assertIsNone(checks.compile_file(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n", "m.py"))
        self.assertIn("utf-8", checks.compile_file(b"x = '\xe9'\n", "m.py")["message"].lower())
        # A module, not a block: no top-level await.
        self.assertIsNotNone(checks.compile_file(b"await f()\n", "m.py"))
        self.assertIsNotNone(checks.compile_file(b"x = 1\x00\n", "m.py"))

    def test_no_warnings(self):
        import warnings

        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            self.assertIsNone(checks.compile_file(b"x = '\\d'\n", "m.py"))
        self.assertEqual(seen, [])


class WritesTest(unittest.TestCase):
    def setUp(self):
        self.w = checks.Writes()
        self.dir = os.path.realpath(tempfile.mkdtemp())  # as os.getcwd() names it
        self.addCleanup(shutil.rmtree, self.dir)

    def test_events(self):
        p = os.path.join(self.dir, "a.py")
        self.w.hook("open", (p, "w", 0))
        self.w.hook("open", (os.path.join(self.dir, "r.py"), "r", 0))  # a read
        self.w.hook("open", (os.path.join(self.dir, "b.json"), None, os.O_WRONLY | os.O_CREAT))
        self.w.hook("open", (os.path.join(self.dir, "c.yaml"), None, os.O_RDONLY))
        self.w.hook("open", (os.path.join(self.dir, "notes.txt"), "w", 0))  # not checked
        self.w.hook("open", (3, "w", 0))  # a descriptor
        self.w.hook("os.rename", (p + ".tmp", os.path.join(self.dir, "d.toml"), None, None))
        self.w.hook("os.rename", ("x", "e.py", 3, 4))  # relative to folder descriptors
        self.w.hook("open", (pathlib.Path(self.dir) / "f.PY", "ab", 0))
        self.w.hook("exec", (None,))
        cwd = os.getcwd()
        os.chdir(self.dir)
        try:
            self.w.hook("open", (b"g.pyi", "x", 0))
        finally:
            os.chdir(cwd)
        paths, more = self.w.take()
        want = sorted(os.path.join(self.dir, n) for n in ("a.py", "b.json", "d.toml", "f.PY", "g.pyi"))
        self.assertEqual(paths, want)
        self.assertFalse(more)
        self.assertEqual(self.w.take(), ([], False))

    def test_bound(self):
        for i in range(checks.MAX_NOTED + 5):
            self.w.hook("open", (f"/x/{i}.py", "w", 0))
        paths, more = self.w.take()
        self.assertEqual(len(paths), checks.MAX_NOTED)
        self.assertTrue(more)

    def test_a_bad_path_never_fails_the_write(self):
        self.w.hook("open", (object(), "w", 0))
        self.assertEqual(self.w.take(), ([], False))

    def test_real_events(self):
        # The hook stays for the rest of the process: it notes into its
        # own Writes.
        sys.addaudithook(self.w.hook)
        pathlib.Path(self.dir, "a.py").write_text("x = 1\n")
        with open(os.path.join(self.dir, "b.json"), "w") as f:
            f.write("{}")
        fd = os.open(os.path.join(self.dir, "c.toml"), os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
        os.replace(os.path.join(self.dir, "c.toml"), os.path.join(self.dir, "d.yml"))
        open(os.path.join(self.dir, "a.py")).close()  # a read
        paths, _ = self.w.take()
        self.assertEqual(paths, sorted(os.path.join(self.dir, n) for n in ("a.py", "b.json", "c.toml", "d.yml")))


if __name__ == "__main__":
    unittest.main()
