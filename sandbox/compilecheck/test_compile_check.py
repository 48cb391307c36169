"""Tests of compile_check.py; run by TestCompileCheckPython on each CPython."""

import pathlib
import sys
import unittest

SOURCE = (pathlib.Path(__file__).parent / "compile_check.py").read_text()


def check(block):
    """Runs compile_check.py as vis-agent does: INPUT in, OUTPUT out."""
    ns = {"INPUT": block}
    exec(compile(SOURCE, "compile_check.py", "exec"), ns)
    return ns["OUTPUT"]


class CompileCheckTest(unittest.TestCase):
    def test_ok(self):
        self.assertEqual(check("x = 1\nprint(x)\n"), "ok")

    def test_top_level_await_allowed(self):
        self.assertEqual(check("import asyncio\nawait asyncio.sleep(0)\n"), "ok")

    def test_syntax_error_fields(self):
        msg, line, col, text = check("x = 1\ny = (2,\n").split("\0")
        self.assertIn("never closed", msg)
        self.assertEqual((line, col), ("2", "5"))
        self.assertEqual(text.rstrip("\n"), "y = (2,")

    def test_null_byte(self):
        msg, line, col, text = check("x = 1\0\n").split("\0", 3)
        self.assertIn("null", msg)

    def test_file(self):
        def check_file(name, data):
            return check("\0file\0" + name + "\0" + data.decode("latin-1"))

        self.assertEqual(check_file("m.py", b"x = 1\n"), "ok")
        self.assertEqual(check_file("m.py", b"\xef\xbb\xbfx = 1\n"), "ok")  # a byte order mark
        self.assertEqual(check_file("m.py", b"# coding: latin-1\nx = '\xe9'\n"), "ok")
        self.assertIn("utf-8", check_file("m.py", b"x = '\xe9'\n").lower())
        self.assertNotEqual(check_file("m.py", b"await f()\n"), "ok")  # a module, not a block
        msg, line, col, _ = check_file("m.py", b"x = 1\ny = (2,\n").split("\0")
        self.assertEqual((line, col), ("2", "5"))

    def test_warnings_not_printed(self):
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(check("s = '\\d'\n"), "ok")
        self.assertEqual(err.getvalue(), "")


if __name__ == "__main__":
    sys.exit(unittest.main())
