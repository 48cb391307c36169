"""Tests of vis_sandbox.tools: records, rows, short views and the
arguments checked before a host call (the calls themselves are tested
through the built binary: cmd/vis-agent/sandbox_tools_test.go)."""

import contextlib
import io
import json
import os
import pathlib
import pickle
import struct
import sys
import tempfile
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vis_sandbox import tools  # noqa: E402


def png(width, height):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    raw = b"".join(b"\x00" + b"\x00" * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


class RecordTest(unittest.TestCase):
    def setUp(self):
        self.r = tools.Record({"status": "exited", "items": [1, 2], "transcript": {"turns": [{"code": "x"}]}})

    def test_both_ways_at_any_depth(self):
        self.assertEqual(self.r["status"], self.r.status)
        self.assertEqual(self.r.transcript.turns[0].code, "x")
        self.assertEqual(self.r["transcript"]["turns"][0]["code"], "x")
        # Dictionary names keep their meaning.
        self.assertTrue(callable(self.r.items))
        self.assertEqual(self.r["items"], [1, 2])

    def test_unknown_fields_list_the_fields(self):
        with self.assertRaises(KeyError) as cm:
            self.r["methods"]
        self.assertIn("status, items, transcript", str(cm.exception))
        with self.assertRaises(AttributeError) as cm:
            _ = self.r.methods
        self.assertIn("'methods'", str(cm.exception))
        self.assertIn("status, items, transcript", str(cm.exception))
        self.assertFalse(hasattr(self.r, "nope"))
        self.assertIsNone(self.r.get("nope"))

    def test_dict_json_pickle(self):
        self.assertEqual(dict(self.r)["status"], "exited")
        self.assertEqual(json.loads(json.dumps(self.r))["transcript"]["turns"][0]["code"], "x")
        back = pickle.loads(pickle.dumps(self.r))
        self.assertEqual(back, self.r)
        self.assertEqual(back.transcript.turns[0].code, "x")

    def test_short_repr(self):
        r = tools.Record({"text": "x" * 1000})
        self.assertLess(len(repr(r)), 100)


class AttachmentTest(unittest.TestCase):
    DESC = {"id": "att_1", "filename": "PLAN.md", "version": 2, "kind": "text", "media_type": "text/markdown",
            "size": 2048, "sha256": "ab" * 32, "commentable": True, "created": "2026-01-01T00:00:00Z",
            "session": "s", "block": 4, "comments": [{"id": 1, "text": "ok", "author": "me", "created": "x"}]}

    def test_descriptor(self):
        d = tools.Attachment(self.DESC)
        self.assertEqual(d.version, d["version"])
        self.assertEqual(d.comments[0].text, "ok")
        text = repr(d)
        for part in ("att_1", "PLAN.md v2", "text/markdown", "2 KiB", "commentable", "1 comment", "block 4"):
            self.assertIn(part, text)
        with self.assertRaises(AttributeError) as cm:
            _ = d.bytes
        self.assertIn("attachment has no field 'bytes'", str(cm.exception))

    def test_list_prints_one_row_each(self):
        rows = tools.Records([tools.Attachment(self.DESC), tools.Attachment(dict(self.DESC, version=1, commentable=False))])
        lines = repr(rows).splitlines()
        self.assertEqual(len(lines), 2)
        self.assertIn("read-only", lines[1])
        self.assertEqual(repr(tools.Records()), "(none)")

    def test_payloads(self):
        self.assertEqual(tools._payload("é"), ("é".encode(), ""))
        self.assertEqual(tools._payload(memoryview(b"ab")), (b"ab", ""))
        self.assertEqual(tools._payload(bytearray(b"ab")), (b"ab", ""))
        with tempfile.TemporaryDirectory() as d:
            p = pathlib.Path(d, "data.csv")
            p.write_bytes(b"a,b\n")
            self.assertEqual(tools._payload(p), (b"a,b\n", "data.csv"))
            with self.assertRaises(IsADirectoryError):
                tools._payload(pathlib.Path(d))
            with self.assertRaises(FileNotFoundError):
                tools._payload(pathlib.Path(d, "missing"))
        for bad in (3, None, ["x"], {"a": 1}):
            with self.assertRaises(TypeError):
                tools._payload(bad)

    def test_refs_and_versions(self):
        self.assertEqual(tools._ref("a.txt"), "a.txt")
        self.assertEqual(tools._ref(tools.Attachment(self.DESC)), "att_1")
        self.assertEqual(tools._version(None), 0)
        self.assertEqual(tools._version(-1), -1)
        for bad in (True, 1.5, "1"):
            with self.assertRaises(TypeError):
                tools._version(bad)
        with self.assertRaises(TypeError):
            tools._ref(b"x")


class ViewsTest(unittest.TestCase):
    def test_images(self):
        self.assertEqual(tools.image_info(png(7, 3)), ("PNG", 7, 3))
        self.assertEqual(tools.image_info(b"GIF89a" + struct.pack("<HH", 10, 20) + b"\x00" * 10), ("GIF", 10, 20))
        jpeg = b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"\x00" * 14 + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 48, 64) + b"\x00" * 12
        self.assertEqual(tools.image_info(jpeg), ("JPEG", 64, 48))
        self.assertIsNone(tools.image_info(b"plain text"))
        self.assertIn("PNG image, 7x3 pixels", tools.describe_bytes(png(7, 3)))

    def test_text_head_and_binary(self):
        text = "".join(f"line {i}\n" for i in range(100)).encode()
        view = tools.describe_bytes(text, "text/plain")
        self.assertTrue(view.startswith("line 0\nline 1\n"))
        self.assertIn("80 more lines", view)
        self.assertEqual(tools.describe_bytes(b"short\n"), "short")
        self.assertEqual(tools.describe_bytes(b"\x00\x01\x02" * 10, "application/octet-stream"), "application/octet-stream, 30 bytes")


class TextTest(unittest.TestCase):
    def test_prints_text_then_note(self):
        r = tools.Text({"path": "a", "text": "    1\thello\n", "note": "lines 1-1 of 9 shown"})
        self.assertEqual(str(r), "    1\thello\n(lines 1-1 of 9 shown)")
        self.assertEqual(r.path, "a")
        self.assertEqual(json.loads(json.dumps(r))["note"], "lines 1-1 of 9 shown")
        d = tools.Diff({"path": "a", "diff": "--- a/a\n+++ b/a\n"})
        self.assertEqual(repr(d), "--- a/a\n+++ b/a")


class ShellTest(unittest.TestCase):
    def test_repr_says_what_was_cut(self):
        r = tools.Shell({"id": "sh1", "command": "yes", "status": "exited", "exit": 0, "out": "y\n", "err": "",
                         "out_cut": 99 << 20, "err_cut": 0, "out_bytes": 100 << 20, "err_bytes": 0, "timeout": 300})
        text = repr(r)
        for part in ("sh1", "'yes'", "exited", "exit 0", "out 100 MiB", "99 MiB cut from r.out", "r.logs(n)"):
            self.assertIn(part, text)
        self.assertEqual(r.status, "exited")  # an ended command is not asked again
        self.assertEqual(json.loads(json.dumps(r))["out_cut"], 99 << 20)


class HelpTest(unittest.TestCase):
    def setUp(self):
        self.ns = {}
        self.fn = tools.Functions(self.ns, lambda: 1)
        self.ns.update(self.fn.bound())
        exec("def helper(a, b=2):\n    'Adds b to a (or [more]). More text.'\n    return a + b\n"
             "def bare():\n    pass\nclass Thing:\n    'A thing.'\n", {"__name__": "__main__"}, self.ns)

    def test_apropos(self):
        rows = self.fn.apropos()
        names = [r.name for r in rows]
        for name in tools.NAMES + ("helper", "bare", "Thing"):
            self.assertIn(name, names)
        row = self.fn.apropos("^helper$")[0]
        self.assertEqual((row.type, row[1], row["summary"]), ("function", "helper", "Adds b to a (or [more])."))
        self.assertEqual(len(repr(self.fn.apropos("attach")).splitlines()), len(self.fn.apropos("attach")))
        self.assertEqual([r.name for r in self.fn.apropos("(or [more")], ["helper"])  # not a regex: matched as text
        with self.assertRaises(KeyError):
            row["body"]
        with self.assertRaises(TypeError):
            self.fn.apropos(3)

    def doc(self, what):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.fn.doc(what)
        return out.getvalue()

    def test_doc(self):
        self.assertTrue(self.doc("cat").startswith("cat(path, offset=0, limit=None)\n    Numbered lines"))
        self.assertIn("helper(a, b=2)", self.doc(self.fn.apropos("^helper$")[0]))
        self.assertIn("bare carries no docstring", self.doc("bare"))
        self.assertIn("Thing()", self.doc(self.ns["Thing"]))
        with self.assertRaises(KeyError) as cm:
            self.doc("nothing")
        self.assertIn("apropos()", str(cm.exception))

    def test_argument_checks(self):
        with self.assertRaises(TypeError):
            self.fn.attach("x", commentable="yes")
        with self.assertRaises(TypeError):
            self.fn.attach("x", filename=3)
        with self.assertRaises(TypeError):
            self.fn.shell(["ls"])
        with self.assertRaises(ValueError):
            self.fn.shell("ls", timeout=0)
        with self.assertRaises(TypeError):
            self.fn.cat("a", offset="1")
        with self.assertRaises(ValueError):
            self.fn.cat("a", offset=-1)


if __name__ == "__main__":
    unittest.main()


class JournalTest(unittest.TestCase):
    def test_block_repr(self):
        out = "\n".join(f"line {i}" for i in range(30)) + "\n"
        b = tools.JournalBlock({"id": 7, "client": "mcp", "client_id": "claude", "code": "for i in range(30):\n    print(i)",
                                "output": out, "status": "error", "started": "2026-12-01T17:21:57.305Z", "duration_ms": 12,
                                "error": {"type": "ValueError", "message": "bad"}})
        text = repr(b)
        lines = text.splitlines()
        self.assertEqual(lines[0], "#7 mcp: claude · 2026-12-01 17:21:57 · error · 12 ms · ValueError: bad")
        self.assertEqual(lines[1:3], ["    for i in range(30):", "        print(i)"])
        self.assertIn("  | … 22 more lines …", lines)
        self.assertEqual(lines[-1], "  | line 29")
        self.assertEqual(b.error.type, "ValueError")
        self.assertEqual(repr(tools.JournalBlocks()), "(no finished blocks yet)")

    def test_read_session_checks_n(self):
        fn = tools.Functions({}, lambda: 1)
        for bad in ("3", 2.0, True):
            with self.assertRaises(TypeError):
                fn.read_session(bad)
