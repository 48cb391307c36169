"""Tests of vis_sandbox.checks: compiling files' bytes, and taking the
notes of the checked files a session's code wrote."""

import os
import sys
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


class TakeWrittenTest(unittest.TestCase):
    def test_outside_a_child(self):
        self.assertEqual(checks.take_written(), ([], False))
        self.assertEqual(checks.take_read(), [])

    def test_the_notes(self):
        # The child's built-in module (sandbox/child/written.c), as the driver
        # finds it; its notes are tested through the built binary.
        class Notes:
            @staticmethod
            def take():
                return ["/ws/a.py"], True

            @staticmethod
            def take_read():
                return ["/ws/b.py"]

        saved, checks._vis_written = checks._vis_written, Notes
        try:
            self.assertEqual(checks.take_written(), (["/ws/a.py"], True))
            self.assertEqual(checks.take_read(), ["/ws/b.py"])
        finally:
            checks._vis_written = saved


if __name__ == "__main__":
    unittest.main()
