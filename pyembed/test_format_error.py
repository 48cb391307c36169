"""Tests of format_error.py; run by TestFormatErrorPython on each CPython."""

import json
import sys
import traceback
import unittest
from unittest import mock

from format_error import format_error, type_name


def raised(fn):
    try:
        fn()
    except BaseException as e:  # whatever fn raised
        return e
    raise AssertionError("did not raise")


class Odd(Exception):
    __module__ = "somewhere.mod"

    def __str__(self):
        raise RuntimeError("no str")


class TypeNameTest(unittest.TestCase):
    def test_builtins_and_main_unqualified(self):
        self.assertEqual(type_name(ValueError), "ValueError")
        self.assertEqual(type_name(type("E", (Exception,), {"__module__": "__main__"})), "E")

    def test_other_modules_qualified(self):
        self.assertEqual(type_name(json.JSONDecodeError), "json.decoder.JSONDecodeError")
        self.assertEqual(type_name(Odd), "somewhere.mod.Odd")


class FormatErrorTest(unittest.TestCase):
    def fields(self, exc):
        out = format_error(exc)
        parts = out.split("\0")
        self.assertEqual(len(parts), 3, out)
        return parts

    def test_fields_match_traceback(self):
        def inner():
            raise ValueError("boom")

        e = raised(inner)
        name, message, text = self.fields(e)
        self.assertEqual((name, message), ("ValueError", "boom"))
        self.assertEqual(text, "".join(traceback.format_exception(type(e), e, e.__traceback__)))
        self.assertIn("in inner", text)

    def test_str_failure(self):
        name, message, text = self.fields(raised(lambda: (_ for _ in ()).throw(Odd())))
        self.assertEqual(name, "somewhere.mod.Odd")
        self.assertEqual(message, "<str() failed: RuntimeError>")

    def test_traceback_failure(self):
        with mock.patch.object(traceback, "format_exception", side_effect=MemoryError):
            name, message, text = self.fields(raised(lambda: 1 / 0))
        self.assertEqual(name, "ZeroDivisionError")
        self.assertTrue(text.startswith("ZeroDivisionError: division by zero\n"), text)
        self.assertIn("MemoryError", text)

    def test_nul_escaped(self):
        name, message, text = self.fields(ValueError("a\0b"))
        self.assertEqual(message, "a\\x00b")
        self.assertTrue(text.endswith("ValueError: a\\x00b\n"), text)


if __name__ == "__main__":
    sys.exit(unittest.main())
