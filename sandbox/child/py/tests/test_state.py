"""Tests of vis_sandbox.state: what a session's blocks define and import, its history and sys.path entries."""

import os
import sys
import unittest
import weakref

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sessions import Case, spill_files  # noqa: E402 (it also puts the package on sys.path)

from vis_sandbox import snapfile  # noqa: E402
from vis_sandbox.notices import notice  # noqa: E402


class LearnTest(Case):
    def test_imports_helpers_and_classes_come_back(self):
        s = self.session()
        s.run("""
            import os.path
            import xml.dom.minidom, xml.etree
            import collections.abc as cabc
            from functools import partial as P, lru_cache
            import json as J
        """)
        s.run('''
            @lru_cache(maxsize=None)
            def square(n: int, scale=2) -> int:
                """Square n."""
                return n * n * scale

            if True:
                def nested_if(a):
                    return a

            from dataclasses import dataclass

            @dataclass
            class Point:
                x: int
                y: int = 0

                def norm(self):
                    return abs(self.x) + abs(self.y)

            p = Point(3, -4)
            triple = P(square, scale=3)
        ''')
        self.assertIsNone(s.error)
        r = self.session().restore()
        ns = self.sessions[-1].ns
        self.assertNotIn("error", r)
        self.assertEqual(sorted(r["imports"]), ["J", "P", "cabc", "dataclass", "lru_cache", "os", "xml"])
        self.assertEqual(r["functions"], ["square", "nested_if"])
        self.assertEqual(r["classes"], ["Point"])
        self.assertEqual(sorted(r["variables"]), ["p", "triple"])
        self.assertEqual(r["lost"], {})
        self.assertEqual(ns["square"](3), 18)
        self.assertTrue(hasattr(ns["square"], "cache_info"), "decorator kept")
        self.assertEqual(ns["triple"](2), 12)
        self.assertIs(type(ns["p"]), ns["Point"])
        self.assertEqual(ns["p"].norm(), 7)
        self.assertIs(ns["cabc"], __import__("collections.abc").abc)
        self.assertTrue(hasattr(ns["xml"], "dom") and hasattr(ns["xml"], "etree"))

    def test_newer_definition_wins_and_a_failed_block_keeps_the_old(self):
        s = self.session()
        s.run("def f():\n    return 1\n")
        s.run("def f():\n    return 2\n")
        s.run("raise ValueError('before the new def')\ndef f():\n    return 3\n")
        self.assertIsInstance(s.error, ValueError)
        ns = self.session().ns
        self.sessions[-1].restore()
        self.assertEqual(ns["f"](), 2)

    def test_rebound_and_deleted_names(self):
        s = self.session()
        s.run("""
            def f():
                return 1
            def g():
                return 2
            def h():
                return 3
            lam = lambda: 1
            x = [1, 2]
            y = 'kept'
        """)
        s.run("f = 5\ndel g\ndel x\nfor h in range(2): pass\n")
        r = self.session().restore()
        ns = self.sessions[-1].ns
        self.assertEqual(ns["f"], 5)
        self.assertEqual(ns["h"], 1)
        self.assertNotIn("g", ns)
        self.assertNotIn("x", ns)
        self.assertEqual(ns["y"], "kept")
        self.assertEqual(r["functions"], [])
        self.assertIn("lambda", r["lost"]["lam"])

    def test_del_frees_the_value(self):
        s = self.session()
        s.run("class Box:\n    pass\nb = Box()\n")
        ref = weakref.ref(s.ns["b"])
        s.run("del b")
        self.assertIsNone(ref(), "the state keeps no reference to a deleted value")

    def test_next_block_counts_across_restarts(self):
        s = self.session()
        for _ in range(5):
            s.run("x = 1")
        self.assertEqual(s.state.next_block, 6)
        s2 = self.session()
        s2.restore()
        self.assertEqual(s2.state.next_block, 6)

    def test_a_replaced_counter_reads_as_none_without_waiting(self):
        s = self.session()
        s.run("x = 1")
        counter = os.path.join(self.folder, snapfile.COUNTER)
        for replace in (lambda: os.mkfifo(counter), lambda: os.symlink("/dev/zero", counter)):
            s.close()
            os.remove(counter)
            replace()
            s2 = self.session()
            s2.restore()  # a FIFO would block an open for reading
            self.assertGreaterEqual(s2.state.next_block, 2, "the snapshot's own count")
            s2.run("y = 2")

    def test_async_defs_match_bindings_and_unparsable_blocks(self):
        s = self.session()
        s.run("""
            async def fetch(n):
                return n
            def keep():
                return 1
            match {"keep": 2}:
                case {"keep": keep}:
                    pass
        """)
        r = s.run("x = (")
        self.assertIsInstance(s.error, SyntaxError)
        self.assertTrue(r["changed"] is False)
        s2 = self.session()
        r = s2.restore()
        self.assertEqual(r["functions"], ["fetch"])
        self.assertEqual(s2.ns["keep"], 2)
        import asyncio
        self.assertEqual(asyncio.run(s2.ns["fetch"](3)), 3)

    def test_protected_names_are_neither_saved_nor_restored(self):
        s = self.session(protected=frozenset({"tool"}))
        s.ns["tool"] = lambda: 1
        r = s.run("y = 2")
        self.assertEqual(r["saved"], ["y"])
        s2 = self.session(protected=frozenset({"tool"}))
        s2.restore()
        self.assertNotIn("tool", s2.ns)


class NamesTest(Case):
    def test_save_counts_every_kind_of_name(self):
        s = self.session()
        r = s.run("import json as j\nimport os.path\nimport os.path\ndef f():\n    pass\nclass C:\n    pass\nx = 1\nbig = 'z' * (2 << 20)")
        self.assertEqual(r["names"], 6)  # j, os, f, C, x, big
        self.assertEqual(s.run("x = 2")["names"], 6)
        self.assertEqual(s.run("y = 2")["names"], 7, "the quick path counts too")

    def test_code_names_learn_as_much_as_the_source(self):
        # The same blocks, learned from their code's names (no parse) and
        # from their source, leave the same state behind.
        blocks = ["x = [1]", "def f(a):\n    return x + a", "y = [v for v in x]", "x.append(len(y))",
                  "f = 3", "import json", "json = 4", "z = lambda q: q + w if (w := 1) else 0", "del y"]
        fast, slow = self.session(), self.session()
        for b in blocks:
            fast.run(b, names=True)
            slow.run(b)
            for attr in ("_helpers", "_imports", "_version"):
                self.assertEqual(getattr(fast.state, attr), getattr(slow.state, attr), (b, attr))
            self.assertTrue(slow.state._touched is None or fast.state._touched is not None, b)


class HistoryTest(Case):
    def history(self):
        try:
            return sorted(os.listdir(os.path.join(self.folder, "history")))
        except FileNotFoundError:
            return []

    def test_every_block_links_its_snapshot_and_unchanged_values_are_stored_once(self):
        s = self.session()
        s.run("big = b'a' * (3 << 20)\nx = 1")
        s.run("x = 2")
        s.run("print(x)")  # changes nothing: the same snapshot, linked again once the session is idle
        self.assertEqual(self.history(), ["1-0", "2-1"])
        self.assertEqual(s.state.history_blocks(), [1, 2, 3])
        self.assertEqual(self.history(), ["1-0", "2-1", "3-2"])
        self.assertEqual(len(spill_files(self.folder)), 1, "big is unchanged: one file for every block")
        ino = lambda n: os.stat(os.path.join(self.folder, "history", n)).st_ino  # noqa: E731
        self.assertEqual(ino("2-1"), ino("3-2"))
        self.assertEqual(ino("3-2"), os.stat(os.path.join(self.folder, "snapshot.bin")).st_ino)
        s.run("big = b'b' * (3 << 20)")
        self.assertEqual(len(spill_files(self.folder)), 2, "block 3's big stays for a rewind")

    def test_a_rewind_restores_an_older_block_and_can_be_undone(self):
        s = self.session()
        s.run("rows = list(range(1000))\ndef f():\n    return 'old'\n")
        s.run("rows = rows[:10]\ndef f():\n    return 'new'\n")
        s.run("y = 3")
        self.assertEqual(s.state.history.target(s.state.current), 2)
        self.assertEqual(s.state.history.target(s.state.current, back=2), 1)
        s2 = self.session()
        s2.state.rewind(1)
        r = s2.restore()
        self.assertEqual((len(s2.ns["rows"]), s2.ns["f"](), "y" in s2.ns), (1000, "old", False))
        self.assertEqual(r["variables"], ["rows"])
        self.assertIn("[Sandbox rewound] Rewound.", notice("rewound", r, rewound=True))
        self.assertIn("Files are not rewound", notice("rewound", r, rewound=True))
        self.assertEqual(s2.state.current, 1)
        s2.run("z = 1")  # block 4, run on block 1's state
        self.assertEqual(s2.state.history.line(4), [4, 1])
        self.assertEqual(s2.state.history.target(4), 1, "back one goes along the line, not to block 3")
        s2.state.history.note_files(4, ["notes.json"])
        s3 = self.session()
        self.assertEqual(s3.state.rewind(3), {"rewound_blocks": [4], "rewound_files": ["notes.json"]})  # the undo
        s3.restore()
        self.assertEqual((len(s3.ns["rows"]), s3.ns["f"](), s3.ns["y"]), (10, "new", 3))
        self.assertEqual(s3.state.next_block, 5, "the numbering goes on")

    def test_no_history(self):
        # sandbox.history_blocks = 0 (the host sends -1): nothing recorded
        s = self.session(history_blocks=-1)
        s.run("big = b'a' * (3 << 20)\nx = 1")
        s.run("big = b'b' * (3 << 20)")
        self.assertEqual(s.state.history_blocks(), [])
        self.assertEqual(self.history(), [])
        self.assertEqual(len(spill_files(self.folder)), 1, "no history keeps the old big")

    def test_history_drops_past_its_count_and_its_budget(self):
        s = self.session(history_blocks=3, max_snapshot_mb=8)
        for i in range(5):
            s.run(f"x = {i}")
        self.assertEqual(s.state.history.blocks(), [3, 4, 5])
        with self.assertRaisesRegex(ValueError, r"block 1 is no longer in the history: the history keeps the "
                                    r"snapshots of the last 3 blocks \(sandbox.history_blocks\) within 8 MiB "
                                    r"\(sandbox.max_snapshot_mb\); a rewind can go to blocks 3-5"):
            s.state.rewind(1)
        with self.assertRaisesRegex(ValueError, "does not reach back 3 blocks from block 5: it goes back to block 3"):
            s.state.history.target(5, back=3)
        with self.assertRaisesRegex(ValueError, "none of the history's .*; the history holds blocks 3-5"):
            s.state.history.target(None)
        s.run("a = b'a' * (3 << 20)")  # block 6
        s.run("a = b'b' * (3 << 20)")  # block 7: both fit in 8 MiB
        self.assertEqual(s.state.history.blocks(), [5, 6, 7])
        s.run("a = b'c' * (3 << 20)")  # block 8: 9 MiB with block 6's, over the budget
        self.assertEqual(s.state.history.blocks(), [7, 8])
        self.assertEqual(len(spill_files(self.folder)), 2)

    def test_a_kill_leaves_every_entry_readable_and_hostile_entries_are_no_entries(self):
        s = self.session()
        s.run("x = 1")
        hist = os.path.join(self.folder, "history")
        # a killed writer's temp file, a link to elsewhere, a folder, junk
        open(os.path.join(hist, "9-1.tmp-1-ab"), "w").close()
        os.symlink("/etc/passwd", os.path.join(hist, "7-1"))
        os.mkdir(os.path.join(hist, "8-1"))
        with open(os.path.join(hist, "6-1"), "wb") as f:
            f.write(b"junk")
        s2 = self.session()
        self.assertEqual(s2.state.history.blocks(), [1])
        self.assertFalse(os.path.exists(os.path.join(hist, "9-1.tmp-1-ab")))
        with self.assertRaisesRegex(ValueError, "block 7 has not run: the last block with a snapshot is 1"):
            s2.state.rewind(7)


class SysPathTest(Case):
    def test_entries_added_in_the_workspace_come_back(self):
        ws = os.path.join(self.tmp.name, "ws")
        os.makedirs(os.path.join(ws, "lib"))
        saved = list(sys.path)
        try:
            s = self.session(workspace=ws)
            r = s.run(f"import sys\nsys.path.insert(0, {os.path.join(ws, 'lib')!r})\n"
                      f"sys.path.append({ws!r})\nsys.path.append('/elsewhere')\n")
            self.assertTrue(r["changed"])
            s.run("x = 1")
            self.assertFalse(s.state.save(s.ns)["changed"])
            sys.path[:] = saved
            s2 = self.session(workspace=ws)
            r2 = s2.restore()
            self.assertEqual(r2["paths"], [os.path.join(ws, "lib"), ws])
            self.assertEqual(sys.path[0], os.path.join(ws, "lib"))
            self.assertEqual(sys.path[-1], ws)
            self.assertNotIn("/elsewhere", sys.path)
            self.assertIn("sys.path entries (2)", notice("r", r2))
            self.assertFalse(s2.state.save(s2.ns)["changed"])
            # a change to sys.path alone is a change, also on the quick path
            s2.run("x = 1")
            s2.run("import sys\nsys.path.remove(sys.path[0])")
            self.assertEqual(snapfile.read(s2.state.folder)[0]["sys_path"], [{"path": ws, "front": False}])
        finally:
            sys.path[:] = saved


if __name__ == "__main__":
    unittest.main()
