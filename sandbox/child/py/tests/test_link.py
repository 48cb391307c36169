"""Tests of vis_sandbox.link's bounds: a result's strings cut to fit the
child link (protocol.ChildBounds), an answer still too long replaced."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vis_sandbox import link  # noqa: E402


class ClipTest(unittest.TestCase):
    def test_short_text_is_kept(self):
        self.assertEqual(link.clip("a\nb"), "a\nb")

    def test_long_line_keeps_the_last_line(self):
        text = "Traceback:\n  s = '" + "a" * 10_000_000 + "'\nValueError: " + "b" * 10_000_000
        cut = link.clip(text)
        self.assertLessEqual(len(cut), link.MAX_STRING + 200)
        self.assertIn("\nValueError: bbbb", cut)
        self.assertIn("characters cut] … aaaa", cut)
        self.assertTrue(cut.endswith("b"))

    def test_many_lines_cut_in_the_middle(self):
        text = "".join(f"line {i}\n" for i in range(200_000))
        cut = link.clip(text)
        self.assertLessEqual(len(cut), link.MAX_STRING + 200)
        self.assertTrue(cut.startswith("line 0\n"))
        self.assertTrue(cut.endswith("line 199999\n"))

    def test_answer_too_long_is_replaced(self):
        msg = {"ev": "result", "result": {"block": 3, "snapshot": "saving", "written": ["x"] * 10, "error": None}}
        got = link._within(msg, 20 << 20)
        self.assertEqual(got["result"]["block"], 3)
        self.assertEqual(got["result"]["snapshot"], "saving")
        self.assertNotIn("written", got["result"])
        self.assertIn("over the 16 MiB", got["result"]["error"]["message"])
        self.assertEqual(link._within({"ev": "defs", "data": "x"}, 20 << 20)["ev"], "error")

    def test_long_strings_of_an_answer_are_clipped(self):
        name = "a" * 20_000_000
        msg = {"ev": "defs", "data": {"variables": [{"name": name, "doc": "D" * 20_000_000}], name: [name]}}
        got = link._clipped(msg)
        self.assertEqual(got["ev"], "defs")
        row = got["data"]["variables"][0]
        self.assertLessEqual(len(row["name"]), link.MAX_STRING + 200)
        self.assertIn("characters cut", row["doc"])
        key = [k for k in got["data"] if k != "variables"][0]
        self.assertLessEqual(len(key), link.MAX_STRING + 200)
        self.assertEqual(link._clipped({"n": 3, "ok": True}), {"n": 3, "ok": True})


if __name__ == "__main__":
    unittest.main()
