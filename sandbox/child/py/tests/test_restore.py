"""Tests of vis_sandbox.restore: what comes back after a restart, what does not and why, kills and discards."""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sessions import HERE, PKG_ROOT, Case, MiB, run_child, spill_files  # noqa: E402 (it also puts the package on sys.path)

from vis_sandbox import changes, snapfile  # noqa: E402
from vis_sandbox.notices import notice  # noqa: E402


class RestoreTest(Case):
    def test_restart_in_a_fresh_interpreter(self):
        folder = self.folder
        run_child({"folder": folder, "blocks": [
            "import json\nfrom collections import OrderedDict as OD\n",
            textwrap.dedent('''
                class Counter2:
                    """Counts."""
                    def __init__(self):
                        self.n = 0
                    def bump(self):
                        self.n += 1
                        return self.n

                def fail(x):
                    """Raises."""
                    if x:
                        raise ValueError("boom")
                    return gen

                def uses_fail():
                    return fail(0)

                c = Counter2()
                c.bump()
                od = OD(a=1)
                gen = (i for i in range(2))
                text = "t" * (2 << 20)
            '''),
        ]})
        out = run_child({"folder": folder, "restore": True, "evals": ["c.bump()", "list(od.items())", "len(text)", "fail(1)"]})
        r = out["report"]
        self.assertNotIn("error", r)
        self.assertEqual(r["functions"], ["fail", "uses_fail"])
        self.assertEqual(r["classes"], ["Counter2"])
        self.assertEqual(sorted(r["variables"]), ["c", "od", "text"])
        self.assertEqual(sorted(r["imports"]), ["OD", "json"])
        self.assertEqual(list(r["lost"]), ["gen"])
        self.assertEqual(r["uses_lost"], {"fail": ["gen"], "uses_fail": ["gen"]})
        self.assertEqual(out["evals"]["c.bump()"], "2")
        self.assertEqual(out["evals"]["list(od.items())"], "[('a', 1)]")
        self.assertEqual(out["evals"]["len(text)"], str(2 << 20))
        tb = out["evals"]["fail(1)"]
        self.assertIn('File "<block 2>", line 13, in fail', tb)
        self.assertIn('raise ValueError("boom")', tb)
        n = out["notice"]
        self.assertTrue(n.startswith("[Sandbox restarted] The host was stopped.\n"), n)
        self.assertIn("helpers (2): fail, uses_fail", n)
        self.assertIn("classes (1): Counter2", n)
        self.assertIn("gen: generator cannot be pickled", n)
        self.assertIn("fail (gen), uses_fail (gen)", n)

    def test_builtin_scalars_come_back_without_the_pickler(self):
        scalars = "n = 2 ** 100\nf = -1.5\nz = 1 + 2j\ns = 'é\\udcff'\nb = b'\\x00'\nt = True\nnone = None\n"
        out = run_child({"folder": self.folder, "blocks": [scalars], "evals": ["'_pickle' in __import__('sys').modules"]})
        self.assertEqual(out["evals"]["'_pickle' in __import__('sys').modules"], "False")
        out = run_child({"folder": self.folder, "restore": True,
                         "evals": ["[(type(v).__name__, v) for v in (n, f, z, s, b, t, none)]"]})
        self.assertEqual(sorted(out["report"]["variables"]), ["b", "f", "n", "none", "s", "t", "z"])
        self.assertEqual(out["evals"]["[(type(v).__name__, v) for v in (n, f, z, s, b, t, none)]"],
                         repr([("int", 2 ** 100), ("float", -1.5), ("complex", 1 + 2j), ("str", "é\udcff"),
                               ("bytes", b"\x00"), ("bool", True), ("NoneType", None)]))

    def test_subclasses_of_scalars_are_pickled(self):
        s = self.session()
        s.run("import enum\nclass E(enum.IntEnum):\n    A = 1\ne = E.A\n")
        self.assertEqual(changes.pickled(s.ns["e"], MiB).data[:1], b"\x80")
        self.assertEqual(changes.pickled(1, MiB).data[:1], snapfile.MARSHAL_TAG)
        s.close()
        out = run_child({"folder": self.folder, "restore": True, "evals": ["type(e).__name__"]})
        self.assertEqual(out["evals"]["type(e).__name__"], "'E'")

    def test_failures_do_not_stop_the_rest(self):
        mod_dir = os.path.join(self.tmp.name, "mods")
        os.makedirs(mod_dir)
        with open(os.path.join(mod_dir, "gone_mod.py"), "w") as f:
            f.write("VALUE = 1\ndef deco(fn):\n    return fn\n")
        sys.path.insert(0, mod_dir)
        try:
            s = self.session()
            s.run("""
                import gone_mod
                from gone_mod import deco
                @deco
                def decorated():
                    return 1
                def plain():
                    return gone_mod.VALUE
                class Item:
                    pass
                it = Item()
                n = 5
            """)
            self.assertIsNone(s.error)
        finally:
            sys.path.remove(mod_dir)
            sys.modules.pop("gone_mod", None)
        s2 = self.session()
        r = s2.restore()
        self.assertEqual(r["lost"]["gone_mod"], "could not be restored: ModuleNotFoundError: No module named 'gone_mod'")
        self.assertIn("NameError", r["lost"]["decorated"])
        self.assertEqual(r["functions"], ["plain"])
        self.assertEqual(r["classes"], ["Item"])
        self.assertEqual(sorted(r["variables"]), ["it", "n"])
        self.assertEqual(r["uses_lost"], {"plain": ["gone_mod"]})
        self.assertEqual(s2.state.lost_reason("gone_mod"), r["lost"]["gone_mod"])
        self.assertIsNone(s2.state.lost_reason("n"))

    def test_lost_reason_survives_a_second_restart(self):
        s = self.session()
        s.run("gen = (i for i in range(2))\nx = 1\n")
        s2 = self.session()
        s2.restore()
        s2.run("y = 2")
        s3 = self.session()
        r = s3.restore()
        self.assertEqual(r["lost"], {}, "the notice names it once")
        self.assertIn("generator cannot be pickled", s3.state.lost_reason("gen"))
        s3.run("gen = 5")
        s4 = self.session()
        s4.restore()
        self.assertIsNone(s4.state.lost_reason("gen"))

    def test_variable_needing_a_later_helper(self):
        s = self.session()
        s.run("import functools\ndef base(a, b):\n    return a * b\ndouble = functools.partial(base, 2)\n")
        s.run("def uses_default(k=double):\n    return k(4)\n")
        s2 = self.session()
        r = s2.restore()
        self.assertEqual(r["lost"], {})
        self.assertEqual(s2.ns["uses_default"](), 8)

    def test_restore_then_unchanged_save_writes_nothing(self):
        s = self.session()
        s.run("x = [1, 2]\ns = 'a' * (2 << 20)\ndef f():\n    return x\nimport json\n")
        s2 = self.session()
        s2.restore()
        self.assertFalse(s2.state.save(s2.ns)["changed"])
        self.assertTrue(s2.run("y = x")["changed"])

    def test_no_snapshot(self):
        s = self.session()
        self.assertEqual(s.restore(), {})
        self.assertIn("There was no snapshot", notice("first start", {}))

    @unittest.skipUnless(os.environ.get("VIS_TEST_FIGURES"), "a figure, measured on one CPython (VIS_TEST_FIGURES)")
    def test_restore_timing(self):
        # 4 MiB of pickled values and 32 MiB of spill, restored in a fresh
        # interpreter; against an empty snapshot. A figure for the record,
        # not a check (test_restart_in_a_fresh_interpreter restores on
        # every CPython): its seconds of pickling are spent once.
        base = os.path.join(self.tmp.name, "empty")
        run_child({"folder": base, "blocks": ["x = 1"]})
        run_child({"folder": self.folder, "blocks": [
            "\n".join(f"big{i} = [float(j) for j in range(100000)]" for i in range(4))
            + "\nspill = 'x' * (32 << 20)\n"]})
        empty = [run_child({"folder": base, "restore": True})["restore_ms"] for _ in range(3)]
        full = []
        for _ in range(3):
            out = run_child({"folder": self.folder, "restore": True})
            self.assertEqual(sorted(out["report"]["variables"]), ["big0", "big1", "big2", "big3", "spill"])
            full.append(out["restore_ms"])
        print(f"\nfigure: restore of 4 MiB pickled + 32 MiB spill: {sorted(full)[1]:.1f} ms median of 3; "
              f"empty snapshot: {sorted(empty)[1]:.2f} ms", file=sys.stderr)


KILL_WRITER = r"""
import sys, time
sys.path.insert(0, sys.argv[2])
from sessions import Session
s = Session(sys.argv[1])
s.restore()
i = s.ns.get("a", 0)
while True:
    i += 1
    s.run(f"a = {i}\nb = [{i}] * 100000\nc = 'c' * ((1 << 20) + {i})\ndef f():\n    return {i}\n")
    print(i, flush=True)
"""


class KillTest(Case):
    def test_kill_9_during_writes_leaves_a_readable_snapshot(self):
        rng = random.Random(7)
        last = 0
        for round_ in range(12):
            proc = subprocess.Popen([sys.executable, "-B", "-c", KILL_WRITER, self.folder, HERE],
                                    cwd=PKG_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                proc.stdout.readline()
                time.sleep(rng.uniform(0, 0.05))
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                proc.stdout.close()
                proc.stderr.close()
            s = self.session()
            r = s.restore()
            self.assertNotIn("error", r, f"round {round_}")
            a = s.ns["a"]
            self.assertEqual(s.ns["b"], [a] * 100000)
            self.assertEqual(len(s.ns["c"]), (1 << 20) + a)
            self.assertEqual(s.ns["f"](), a)
            self.assertGreaterEqual(a, last)
            last = a
            spill = os.listdir(os.path.join(self.folder, "spill"))
            self.assertTrue(all(".tmp-" not in n for n in spill))


class DropDiscardTest(Case):
    def test_drop_leaves_names_out_and_keeps_them_out(self):
        s = self.session()
        s.run("import json\nkeep = 1\nbad = [1]\ndef helper():\n    return bad\nbig = 'x' * (2 << 20)\n")
        s2 = self.session()
        r = s2.restore(drop=("bad", "json", "big", "nothere"))
        self.assertEqual((r["dropped"], r["not_found"]), (["bad", "big", "json"], ["nothere"]))
        self.assertEqual(r["variables"], ["keep"])
        self.assertNotIn("bad", s2.ns)
        self.assertEqual(r["uses_lost"], {"helper": ["bad"]})
        self.assertIn("left out on request", s2.state.lost_reason("bad"))
        text = notice("restarted", r)
        self.assertIn("Left out on request (3): bad, big, json.", text)
        self.assertIn("Not in the snapshot, so nothing to leave out: nothere.", text)
        self.assertTrue(s2.state.save(s2.ns, full=True)["changed"])
        # big's file stays while the history's snapshot after block 1 names it
        self.assertEqual(len(spill_files(self.folder)), 1)
        s2.run("x = 1")
        self.assertEqual(s2.state.history.blocks(), [1, 2])
        r3 = self.session().restore()
        self.assertEqual((r3["variables"], r3["imports"], r3["functions"]), (["keep", "x"], [], ["helper"]))

    def test_discard_deletes_the_snapshot_and_names_what_it_held(self):
        s = self.session()
        s.run("import json\nkeep = 1\nbig = 'x' * (2 << 20)\ndef helper():\n    return keep\n")
        s2 = self.session()
        r = s2.state.discard("a test asked for it")
        self.assertEqual(r["held"], ["big", "helper", "json", "keep"])
        self.assertFalse(os.path.exists(os.path.join(self.folder, "snapshot.bin")))
        # the history stays, and with it big's file: a rewind can bring it back
        self.assertEqual(len(spill_files(self.folder)), 1)
        self.assertEqual(s2.state.history.blocks(), [1])
        self.assertGreaterEqual(s2.state.next_block, 2, "numbering goes on")
        self.assertIn("discarded", s2.state.lost_reason("keep"))
        text = notice("restarted", r)
        self.assertIn("The snapshot was discarded: a test asked for it; the session starts empty.", text)
        self.assertIn("It held (4): big, helper, json, keep.", text)
        # an unreadable one is discarded too
        with open(os.path.join(self.folder, "snapshot.bin"), "wb") as f:
            f.write(b"junk")
        r = self.session().state.discard("why")
        self.assertEqual(r["unreadable"], "it is not a vis-agent snapshot")
        self.assertIn("It could not be read", notice("r", r))
        self.assertEqual(self.session().restore(), {})


if __name__ == "__main__":
    unittest.main()
