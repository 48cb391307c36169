"""Tests of vis_sandbox.noctypes, in a fresh interpreter each (the finder
changes sys.meta_path for good)."""

import os
import subprocess
import sys
import textwrap
import unittest

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent("""
    import sys
    sys.modules.pop("ctypes", None)
    from vis_sandbox import noctypes
    noctypes.install()
    import ctypes, ctypes.util
    print(repr(ctypes).startswith("<module 'ctypes' (a stand-in"))
    for probe in ("ctypes.CDLL", "ctypes.util.find_library", "ctypes.memmove"):
        mod, name = probe.rsplit(".", 1)
        try:
            getattr(sys.modules[mod], name)
        except ImportError as e:
            print(e)
    try:
        from ctypes import c_int
    except ImportError as e:
        print("from-import:", e)
    try:
        ctypes.__wrapped__
    except AttributeError:
        print("dunders: AttributeError")
    print("optional:", bool(ctypes))
""")


class StandInTest(unittest.TestCase):
    def test_imports_and_every_name_says_why(self):
        out = subprocess.run([sys.executable, "-B", "-c", SCRIPT], cwd=PKG_ROOT, capture_output=True, text=True, check=True).stdout
        reason = "refused by the sandbox's jail (no ctypes: it writes any memory of the interpreter)"
        self.assertEqual(out.splitlines(), [
            "True",
            "ctypes.CDLL: " + reason,
            "ctypes.util.find_library: " + reason,
            "ctypes.memmove: " + reason,
            "from-import: ctypes.c_int: " + reason,
            "dunders: AttributeError",
            "optional: True",
        ])


if __name__ == "__main__":
    unittest.main()
