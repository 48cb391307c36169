"""Tests of vis_sandbox.inplace: a rewind in the live process gives the
state the snapshot restore gives, reusing only the values it proves
unchanged; what it cannot prove is read back, and what it refuses is a
restart's."""

import builtins
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sessions import Case  # noqa: E402 (it also puts the package on sys.path)

from vis_sandbox import changes, inplace  # noqa: E402
from vis_sandbox.notices import notice  # noqa: E402


def rewind_in_place(s, block):
    """What the driver does (Driver.rewind_here), but for the output
    capture: the report and the notice."""
    rewound = s.state.rewind(block)
    s.ns.clear()
    s.ns.update(types.ModuleType("__main__").__dict__)
    s.ns["__builtins__"] = builtins
    report = s.state.rewind_in_place(s.ns, block)
    report.update(rewound)
    return report, notice("rewound", report, rewound=True)


def variables(ns):
    return {n: v for n, v in ns.items() if not n.startswith("__") and not callable(v) and not isinstance(v, type)}


class InPlaceTest(Case):
    def both(self, blocks, target):
        """Runs blocks, rewinds to target in place, then restores the same
        snapshot in a new session (the restart's way): both states and
        reports, which must agree."""
        s = self.session()
        for b in blocks:
            s.run(b, names=True)
        kept = dict(s.state.kept.records[target])
        report, text = rewind_in_place(s, target)
        snap = self.session()
        again = snap.restore()
        again.update({"rewound_blocks": report["rewound_blocks"], "rewound_files": report["rewound_files"]})
        in_place = text.splitlines()
        self.assertTrue(in_place[-1].startswith("Rewound in place, without a new process:"), text)
        self.assertEqual(in_place[:-1], notice("rewound", again, rewound=True).splitlines(), "the notices")
        for key in ("imports", "functions", "classes", "variables", "paths", "lost", "uses_lost"):
            self.assertEqual(report[key], again[key], key)
        self.assertEqual(sorted(variables(s.ns)), sorted(variables(snap.ns)))
        for name, v in variables(snap.ns).items():
            if type(v).__module__ == "__main__":  # a block's class: each session has its own
                self.assertEqual((type(s.ns[name]).__qualname__, vars(s.ns[name])), (type(v).__qualname__, vars(v)))
            else:
                self.assertEqual(s.ns[name], v, name)
        return s, kept, report

    def test_a_destructive_block_comes_back_in_place_as_the_snapshot_gives_it(self):
        s, kept, report = self.both([
            "rows = list(range(1000))\nbig = 'x' * (3 << 20)\nt = (1, 'a')\nd = {'a': [1, 2]}\n"
            "def f():\n    return 'old'\nclass P:\n    pass\np = P()",
            "rows = rows[:10]\nd['a'].append(3)\ndel big\ndef f():\n    return 'new'",
        ], 1)
        ns = s.ns
        self.assertIs(ns["rows"], kept["rows"].obj, "unchanged: the very list")
        self.assertNotIn("big", kept, "a value whose name a block deleted is let go of")
        self.assertEqual(ns["big"], "x" * (3 << 20))
        self.assertEqual(ns["d"], {"a": [1, 2]}, "changed in place: read back from the snapshot")
        self.assertIsNot(ns["d"], kept["d"].obj)
        self.assertIs(type(ns["p"]), ns["P"], "an instance of a block's class is read back, with the class")
        self.assertEqual(ns["f"](), "old")
        self.assertEqual(report["in_place"], {"reused": 2, "read": 3})
        self.assertEqual(s.state.current, 1)
        # a block goes on from there
        s.run("u = len(rows)", names=True)
        self.assertEqual(s.state.history.line(s.state.current), [3, 1])

    def test_a_rewind_of_a_rewind(self):
        s = self.session()
        s.run("v = [1]", names=True)
        s.run("v = [2]", names=True)
        first = s.ns["v"]
        rewind_in_place(s, 1)
        self.assertEqual(s.ns["v"], [1])
        report, _ = rewind_in_place(s, 2)  # the undo
        self.assertIs(s.ns["v"], first)
        self.assertEqual(report["in_place"], {"reused": 1, "read": 0})
        self.assertEqual(report["rewound_blocks"], [])

    def test_values_sharing_an_object_come_back_apart_as_from_the_snapshot(self):
        s, _, report = self.both(["a = [1]\nb = [a, 2]", "a = 0"], 1)
        self.assertIsNot(s.ns["b"][0], s.ns["a"])
        self.assertEqual(report["in_place"], {"reused": 1, "read": 1})

    def test_hostile_values_are_read_back(self):
        s = self.session()
        s.run("""
            class Odd:
                n = 0
                def __reduce__(self):
                    Odd.n += 1
                    if Odd.n > 1:
                        raise SystemExit('no second pickle')
                    return (list, ())
            odd = Odd()
            box = (Odd,)
            w = [1, 2]
        """, names=True)
        s.run("w.append(3)", names=True)
        report, _ = rewind_in_place(s, 1)
        # odd and box hold the block's class, which the restore defines anew;
        # w changed
        self.assertEqual(report["in_place"], {"reused": 0, "read": 3})
        self.assertEqual((s.ns["odd"], s.ns["box"], s.ns["w"]), ([], (s.ns["Odd"],), [1, 2]))
        # a pickle that raises now, of a class of no block's
        s = self.session()
        s.run("""
            class Later:
                __module__ = "elsewhere"
                n = 0
                def __reduce__(self):
                    type(self).n += 1
                    if type(self).n > 1:
                        raise SystemExit('no second pickle')
                    return (list, ())
            later = Later()
        """, names=True)
        s.run("y = 1", names=True)
        report, _ = rewind_in_place(s, 1)
        self.assertEqual((report["in_place"], s.ns["later"]), ({"reused": 0, "read": 1}, []))


class AheadTest(Case):
    def setUp(self):
        super().setUp()
        self.calls = 0
        real = changes.probe

        def counted(value, pins):
            self.calls += 1
            return real(value, pins)

        changes.probe = counted
        self.addCleanup(setattr, changes, "probe", real)

    def spilled(self):
        """A session whose block 1 spilled a list, probed as a frame is, and
        whose block 2 rebound it."""
        s = self.session()
        s.run("big = list(range(300_000))", names=True)  # over 1 MiB: spilled
        s.run("big = 0", names=True)
        e = s.state.kept.records[1]["big"]
        e.probe, e.pins = changes.probe(e.obj, None)
        self.calls = 0
        return s, e

    def test_a_probe_done_ahead_serves_the_rewind(self):
        s, e = self.spilled()
        s.state.kept.verify_ahead(1)
        s.state.kept.verify_ahead(1)
        self.assertEqual(self.calls, 1, "once, until a request may run code")
        report, _ = rewind_in_place(s, 1)
        self.assertEqual((self.calls, report["in_place"]), (1, {"reused": 1, "read": 0}))
        self.assertIs(s.ns["big"], e.obj)

    def test_a_request_that_may_run_code_undoes_it(self):
        s, e = self.spilled()
        s.state.kept.verify_ahead(1)
        s.state.kept.unverify()  # the driver's loop, for a run
        e.obj.append(1)
        report, _ = rewind_in_place(s, 1)
        self.assertEqual((self.calls, report["in_place"]), (2, {"reused": 0, "read": 1}))
        self.assertEqual(len(s.ns["big"]), 300_000)


class KeptTest(Case):
    def test_the_bound_drops_the_oldest_blocks(self):
        s = self.session()
        s.state.kept.max_bytes = 5 << 20
        for i in range(3):
            s.run(f"big = bytes([{i}]) * (3 << 20)", names=True)
        self.assertEqual(sorted(s.state.kept.records), [2, 3], "3 MiB held besides the current value")
        self.assertIn("does not keep the values of block 1", s.state.kept.refuses(1))
        for i in range(10):
            s.run(f"x = {i}", names=True)
        self.assertEqual(len(s.state.kept.records), inplace.KEEP_BLOCKS)

    def test_an_internal_error_records_nothing(self):
        s = self.session()
        s.run("v = [1]", names=True)
        s.run("v = [2]", names=True)
        real = inplace.InPlace.run
        inplace.InPlace.run = lambda self: 1 / 0
        self.addCleanup(setattr, inplace.InPlace, "run", real)
        s.state.rewind(1)
        with self.assertRaises(ZeroDivisionError):
            s.state.rewind_in_place(s.ns, 1)
        # the restart's exit save labels no block with this state
        self.assertIsNone(s.state._history_block)
        self.assertEqual(s.state.kept.records, {})

    def test_no_history_keeps_nothing(self):
        s = self.session(history_blocks=-1)
        s.run("x = 1")
        self.assertEqual(s.state.kept.records, {})

    def test_a_block_that_reaches_out_refuses_the_rewinds_past_it(self):
        kept = inplace.Kept()
        kept.records = {1: {}, 3: {}}
        kept.ran(2, True)
        self.assertIn("block 2 may have changed state", kept.refuses(1))
        self.assertIsNone(kept.refuses(3))


class ReachesOutTest(unittest.TestCase):
    def test_what_reaches_out(self):
        class Hostile:
            __module__ = "__main__"

            def __getattribute__(self, name):
                raise RuntimeError(name)

        ns = {"os": os, "x": 1, "getcwd": os.getcwd, "Counter": changes.Entry, "h": Hostile()}
        exec("def pure(a):\n    return a + x\ndef impure():\n    return os.getcwd()", ns)
        ns["pure"].__module__ = ns["impure"].__module__ = "__main__"
        cases = {"y = x + 1": False, "print(pure(2))": False, "impure()": True, "os.chdir('/')": True,
                 "getcwd()": True, "Counter(1)": True, "import json": True, "globals()['x'] = 2": True,
                 "setattr(h, 'a', 1)": True, "h.a": True}
        for src, want in cases.items():
            names = set()
            changes.code_names(compile(src, "<block>", "exec"), names)
            self.assertEqual(inplace.reaches_out(names, ns, src), want, src)


if __name__ == "__main__":
    unittest.main()
