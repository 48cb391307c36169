"""Tests of vis_sandbox.ahead: the Python files compiled ahead while the
session is idle, and the hashes patch() sends for them."""

import hashlib
import os
import socket
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vis_sandbox import ahead  # noqa: E402


def key(data):
    return hashlib.sha256(data).hexdigest()[:32]


class AheadTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        ahead._pending.clear()
        ahead._known.clear()
        ahead._scan.clear()
        self.addCleanup(ahead._pending.clear)
        self.addCleanup(ahead._known.clear)
        self.addCleanup(ahead._scan.clear)
        # A link with no request waiting, and one with a request.
        self.quiet, self.other = socket.socketpair()
        self.addCleanup(self.quiet.close)
        self.addCleanup(self.other.close)

    def path(self, name, data):
        p = os.path.join(self.dir.name, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def idle(self):
        ahead.idle(self.quiet.fileno(), quiet=0)

    def test_valid_file_keeps_its_hash(self):
        p = self.path("m.py", b"def f():\n    return 1\n")
        ahead.note(p)
        self.idle()
        self.assertEqual(ahead.key_of(p), key(b"def f():\n    return 1\n"))
        self.assertEqual(ahead._pending, {})

    def test_invalid_file_none(self):
        p = self.path("m.py", b"def f(:\n")
        ahead.note(p)
        self.idle()
        self.assertIsNone(ahead.key_of(p))

    def test_changed_file_forgets_or_renews(self):
        p = self.path("m.py", b"x = 1\n")
        ahead.note(p)
        self.idle()
        self.assertEqual(ahead.key_of(p), key(b"x = 1\n"))
        self.path("m.py", b"x = (\n")
        os.utime(p, ns=(1, 1))  # another time, whatever the clock's tick
        ahead.note(p)
        self.idle()
        self.assertIsNone(ahead.key_of(p))
        self.path("m.py", b"x = 22\n")
        ahead.note(p)
        self.idle()
        self.assertEqual(ahead.key_of(p), key(b"x = 22\n"))

    def test_unchanged_file_not_read_again(self):
        p = self.path("m.py", b"x = 1\n")
        ahead.note(p)
        self.idle()
        stamp, _ = ahead._known[p]
        ahead._known[p] = (stamp, "kept")
        ahead.note(p)
        self.idle()
        self.assertEqual(ahead.key_of(p), "kept")

    def test_not_python_symlink_big_fifo(self):
        target = self.path("t.py", b"x = 1\n")
        link = os.path.join(self.dir.name, "l.py")
        os.symlink(target, link)
        big = self.path("big.py", b"x = 1\n" * (ahead.MAX_FILE // 6 + 1))
        fifo = os.path.join(self.dir.name, "f.py")
        os.mkfifo(fifo)
        txt = self.path("m.txt", b"x = 1\n")
        for p in (link, big, fifo, txt):
            ahead.note(p)
        self.idle()
        for p in (link, big, fifo, txt):
            self.assertIsNone(ahead.key_of(p), p)

    def test_relative_names(self):
        p = self.path("m.py", b"x = 1\n")
        cwd = os.getcwd()
        os.chdir(self.dir.name)
        try:
            ahead.note("m.py")
            self.idle()
            self.assertEqual(ahead.key_of("m.py"), key(b"x = 1\n"))
            self.assertEqual(ahead.key_of(p), key(b"x = 1\n"))
        finally:
            os.chdir(cwd)
        self.assertIsNone(ahead.key_of(42))

    def test_read_but_not_written(self):
        read = self.path("r.py", b"x = 1\n")
        written = self.path("w.py", b"x = 1\n")
        ahead.note_read([read, written], [written])
        self.assertEqual(list(ahead._pending), [read])

    def test_a_failure_is_skipped(self):
        ok = self.path("ok.py", b"x = 1\n")
        ahead.note(ok)
        ahead.note(self.path("bad.py", b"x = 1\n"))
        compile_ahead = ahead.compile_ahead

        def failing(path):
            if path.endswith("bad.py"):
                raise RuntimeError("boom")
            compile_ahead(path)

        ahead.compile_ahead = failing
        try:
            self.idle()
        finally:
            ahead.compile_ahead = compile_ahead
        self.assertEqual(ahead.key_of(ok), key(b"x = 1\n"))

    def test_stops_when_a_request_comes(self):
        p = self.path("m.py", b"x = 1\n")
        ahead.note(p)
        self.other.send(b"x")
        self.idle()
        self.assertIsNone(ahead.key_of(p))
        self.assertIn(p, ahead._pending)

    def test_last_noted_first_and_bounded(self):
        paths = [self.path(f"m{i}.py", b"x = 1\n") for i in range(ahead.MAX_PENDING + 3)]
        for p in paths:
            ahead.note(p)
        self.assertEqual(len(ahead._pending), ahead.MAX_PENDING)
        self.assertNotIn(paths[0], ahead._pending)
        self.assertEqual(list(ahead._pending)[-1], paths[-1])
        self.assertEqual(ahead._pending.popitem()[0], paths[-1])

    def test_known_bounded(self):
        saved = ahead.MAX_KNOWN
        ahead.MAX_KNOWN = 3
        try:
            paths = [self.path(f"m{i}.py", b"x = 1\n") for i in range(5)]
            for p in paths:
                ahead.compile_ahead(p)
            self.assertEqual(list(ahead._known), paths[2:])
        finally:
            ahead.MAX_KNOWN = saved

    def test_walk_newest_first_within_bounds(self):
        old = self.path("pkg/old.py", b"x = 1\n")
        new = self.path("new.py", b"x = 1\n")
        os.utime(old, ns=(10**18, 10**18))
        os.utime(new, ns=(2 * 10**18, 2 * 10**18))
        self.path(".git/x.py", b"x = 1\n")
        self.path("node_modules/y.py", b"x = 1\n")
        self.path("big.py", b"#" * (ahead.MAX_FILE + 1))
        self.path("readme.txt", b"")
        os.symlink(self.dir.name, os.path.join(self.dir.name, "loop"))
        self.assertEqual(ahead.walk(self.dir.name), [new, old])
        saved = ahead.MAX_SCAN_FILES
        ahead.MAX_SCAN_FILES = 1
        try:
            self.assertEqual(ahead.walk(self.dir.name), [new])
        finally:
            ahead.MAX_SCAN_FILES = saved

    def test_start_walks_the_workspace_at_idle(self):
        p = self.path("a/m.py", b"x = 1\n")
        ahead.start(self.dir.name)
        self.assertIsNone(ahead.key_of(p))
        self.idle()
        self.assertEqual(ahead.key_of(p), key(b"x = 1\n"))
        self.assertEqual(ahead._scan, [])


if __name__ == "__main__":
    unittest.main()
