"""Tests of vis_sandbox.defs: the session's defs() listing."""

import hashlib
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sessions import Session  # noqa: E402 (it also puts the package on sys.path)

from vis_sandbox.defs import listing, make_defs  # noqa: E402


class DefsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.s = Session(os.path.join(self.tmp.name, "s"), protected=frozenset({"defs"}))
        self.s.ns["defs"] = make_defs(self.s.state, self.s.ns)
        self.defs = self.s.ns["defs"]

    def tearDown(self):
        self.s.close()
        self.tmp.cleanup()

    def setup_session(self):
        self.s.run('''
            import json as J

            def load(path, limit=10, *, strict=False, **kw):
                """Load rows from a file.

                Details that the listing leaves out."""
                return helper2(path) + missing_thing

            def helper2(p, /, q=None, *args):
                return [p]

            class Report:
                """A report
                over two lines."""
                def __init__(self, rows, title="t"):
                    self.rows = rows

            secret = "do-not-show-this-value"
            rows = [1, 2, 3]
            gen = (i for i in range(2))
        ''')

    def test_listing_rows(self):
        self.setup_session()
        text = self.defs()
        self.assertEqual(repr(text), str(text), "an echoed defs() shows the listing")
        lines = str(text).splitlines()
        self.assertEqual(lines[0], "defs: 3 helpers, 3 variables; rows 1-6 of 6")
        self.assertIn("  load(path, limit=<int>, *, strict=<bool>, **kw) | block 1 | 5 lines | Load rows from a file.", lines)
        self.assertIn("  helper2(p, /, q=<NoneType>, *args) | block 1 | 2 lines", lines)
        self.assertIn("  class Report(rows, title=<str>) | block 1 | 5 lines | A report", lines)
        self.assertIn("  rows: list, 22 B | saved", lines)
        self.assertTrue(any(ln.startswith("  secret: str, ") and ln.endswith("| saved") for ln in lines))
        self.assertIn("  gen: generator, ", text)
        self.assertIn("| not saved: generator cannot be pickled", text)
        self.assertNotIn("do-not-show-this-value", text)
        self.assertNotIn("[1, 2, 3]", text)
        self.assertTrue(all(len(ln) <= 122 for ln in lines))

    def test_one_name(self):
        self.setup_session()
        text = str(self.defs("load"))
        self.assertTrue(text.startswith("load(path, limit=<int>, *, strict=<bool>, **kw) | block 1 | 5 lines"))
        self.assertIn("def load(path, limit=10, *, strict=False, **kw):\n", text)
        self.assertIn("return helper2(path) + missing_thing", text)
        detailed = str(self.defs("load", details=True))
        source = self.s.state.helpers(self.s.ns)["load"]["source"]
        self.assertIn("reads: helper2; missing: missing_thing", detailed)
        self.assertIn("sha256: " + hashlib.sha256(source.encode()).hexdigest(), detailed)
        self.assertEqual(str(self.defs("rows")), "rows: list, 22 B | saved")
        self.assertNotIn("do-not-show", str(self.defs("secret")))
        self.assertEqual(str(self.defs("J")), "J: json (imported)")
        self.assertEqual(str(self.defs("nope")), "No helper or variable named 'nope'.")
        self.assertEqual(str(self.defs("lod")), "No helper or variable named 'lod'. Nearest names: load.")

    def test_one_variable_shows_its_whole_reason(self):
        self.s.run("import threading\n" + "a_rather_long_variable_name_for_a_lock_" * 2 + " = threading.Lock()\n")
        name = "a_rather_long_variable_name_for_a_lock_" * 2
        row = [ln for ln in str(self.defs()).splitlines() if ln.startswith("  " + name)][0]
        whole = str(self.defs(name))
        self.assertTrue(row.endswith("…"), row)
        self.assertFalse(whole.endswith("…"), whole)
        self.assertTrue(whole.startswith(row[2:-1]), (row, whole))

    def test_lost_name_says_why(self):
        self.setup_session()
        s2 = Session(self.s.state.folder, protected=frozenset({"defs"}))
        try:
            s2.restore()
            self.assertEqual(str(listing(s2.state, s2.ns, "gen")),
                             "No helper or variable named 'gen'. It did not come back after the restart: "
                             "generator cannot be pickled: cannot pickle 'generator' object.")
        finally:
            s2.close()
            sys.modules["__main__"] = self.s.module

    def test_pattern_limit_offset_and_paging(self):
        self.s.run("\n".join(f"def fn{i:03}(a, b={i}):\n    return a\n" for i in range(30)) + "\nv = 1\n")
        text = str(self.defs())
        self.assertTrue(text.startswith("defs: 30 helpers, 1 variable; rows 1-20 of 31\n"), text)
        self.assertIn("11 more: defs(offset=20)", text)
        self.assertTrue(text.endswith("\nRewind can go to block 1 (the state is block 1's): rewind_session(to=N), "
                                      "or sandbox rewind --to N."), text)
        page = str(self.defs(offset=20, limit=5))
        self.assertIn("rows 21-25 of 31", page)
        self.assertIn("fn020(a, b=<int>)", page)
        self.assertNotIn("fn019", page)
        self.assertIn("6 more: defs(offset=25)", page)
        m = str(self.defs(pattern=r"fn00[1-3]$"))
        self.assertTrue(m.startswith("defs: 3 helpers, 0 variables matching 'fn00[1-3]$'; rows 1-3 of 3"), m)
        self.assertEqual(str(self.defs(pattern="zzz")), "defs: 0 helpers, 0 variables matching 'zzz'.")
        self.assertIn("past the last row", str(self.defs(offset=100)))
        details = str(self.defs(pattern="fn000", details=True))
        self.assertIn("    reads: -", details)

    def test_bad_arguments(self):
        cases = [
            ((1,), {}, TypeError, "name"),
            ((), {"pattern": 3}, TypeError, "pattern"),
            ((), {"pattern": "("}, ValueError, "pattern"),
            ((), {"limit": "5"}, TypeError, "limit"),
            ((), {"limit": True}, TypeError, "limit"),
            ((), {"limit": 0}, ValueError, "limit"),
            ((), {"offset": -1}, ValueError, "offset"),
            ((), {"offset": 1.5}, TypeError, "offset"),
            ((), {"details": "yes"}, TypeError, "details"),
        ]
        for args, kw, exc, arg in cases:
            with self.subTest(args=args, kw=kw):
                with self.assertRaises(exc) as cm:
                    self.defs(*args, **kw)
                self.assertIn(f"defs(): {arg} ", str(cm.exception))
        with self.assertRaises(TypeError):
            self.defs(None, None)

    def test_240_helpers_list_small(self):
        src = "\n".join(
            f'def process_item_{i:03}(record, threshold=0.5, *, mode="fast"):\n'
            f'    """Process one record of kind {i} and return the cleaned value."""\n'
            f'    return record\n'
            for i in range(240))
        self.s.run(src)
        text = str(self.defs())
        self.assertIn("rows 1-20 of 240", text)
        self.assertLess(len(text.encode()), 8 * 1024)
        print(f"\nfigure: defs() with 240 helpers: {len(text.encode())} bytes (first page of 20 rows)", file=sys.stderr)

    def test_describe_is_json(self):
        self.setup_session()
        d = self.s.state.describe(self.s.ns)
        json.dumps(d)
        self.assertEqual([h["name"] for h in d["helpers"]], ["load", "helper2", "Report"])
        self.assertEqual(d["helpers"][0], {"name": "load", "kind": "function",
                                           "signature": "load(path, limit=<int>, *, strict=<bool>, **kw)",
                                           "block": 1, "lines": 5, "doc": "Load rows from a file."})
        by_name = {v["name"]: v for v in d["variables"]}
        self.assertEqual(sorted(by_name), ["gen", "rows", "secret"])
        self.assertEqual(by_name["rows"], {"name": "rows", "type": "list", "size": 22, "saved": True, "reason": None})
        self.assertFalse(by_name["gen"]["saved"])
        self.assertNotIn("do-not-show", json.dumps(d))


if __name__ == "__main__":
    unittest.main()
