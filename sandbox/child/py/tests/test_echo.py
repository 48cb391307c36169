"""Tests of vis_sandbox.echo: what a block's trailing expression shows."""

import builtins
import contextlib
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vis_sandbox import defs, echo, tools  # noqa: E402


class EchoTest(unittest.TestCase):
    def test_repr_of_a_value(self):
        self.assertEqual(echo.text({"a": 1}), "{'a': 1}")
        self.assertEqual(echo.text("x"), "'x'")

    def test_a_long_repr_is_cut_with_a_note(self):
        shown = echo.text("x" * 10000)
        self.assertLessEqual(len(shown), echo.ECHO_MAX + 120)
        self.assertIn("repr cut: 5,906 more characters", shown)

    def test_a_huge_container_is_not_repr_whole(self):
        shown = echo.text(list(range(2_000_000)))
        self.assertIn("2,000,000 items", shown)
        self.assertLess(len(shown), echo.ECHO_MAX + 200)

    def test_the_session_listings_show_whole(self):
        listing = defs.Listing("row\n" * 2000)
        self.assertEqual(echo.text(listing), str(listing))
        rows = tools.Rows([tools.Row(("tool", "cat", "x" * 50))] * 200)
        self.assertEqual(echo.text(rows), repr(rows))

    def test_a_broken_repr(self):
        class Bad:
            def __repr__(self):
                raise ValueError("no")

        self.assertEqual(echo.text(Bad()), "<repr of Bad failed: ValueError: no>")

    def test_displayhook_skips_none_and_sets_underscore(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            echo.displayhook(None)
            echo.displayhook(42)
        self.assertEqual(out.getvalue(), "42\n")
        self.assertEqual(builtins._, 42)


if __name__ == "__main__":
    unittest.main()
