"""Tests of vis_sandbox.notices: the restart notice's text."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from vis_sandbox.notices import notice  # noqa: E402


class NoticeTest(unittest.TestCase):
    def test_many_names_and_reasons(self):
        report = {"functions": [f"f{i}" for i in range(15)], "classes": [], "variables": ["v"],
                  "imports": ["np"], "lost": {f"l{i:02}": "over the 1 MiB limit for one saved value" for i in range(14)},
                  "uses_lost": {"f1": ["l00"]}}
        text = notice("the session was idle for 5 minutes.", report)
        self.assertEqual(text.splitlines()[0], "[Sandbox restarted] The session was idle for 5 minutes.")
        self.assertIn("helpers (15): f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, +3 more", text)
        self.assertIn("variables (1): v; imports (1): np.", text)
        self.assertIn("Did not come back (14):", text)
        self.assertIn("  l11: over the 1 MiB limit for one saved value\n  +2 more", text)
        self.assertIn("Restored helpers that use a name that did not come back: f1 (l00).", text)


if __name__ == "__main__":
    unittest.main()
