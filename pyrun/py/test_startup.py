"""Tests of startup.py, run with each CPython by startup_test.go."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import startup  # noqa: E402


def run(code, *args, env=None):
    """Run code in a fresh python with startup importable (PYTHONPATH's
    first entry)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, env.get("PYTHONPATH")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ beside the sources
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, env=env)


class InsertRoots(unittest.TestCase):
    def test_after_pythonpath_before_stdlib(self):
        out = run("""
            import sys, startup
            startup.insert_roots(["/r1", "/r2", "/pp"])
            zip_at = next(i for i, p in enumerate(sys.path) if p.endswith(".zip"))
            print(sys.path[:zip_at])
        """, env=dict(os.environ, PYTHONPATH="/pp"))
        self.assertEqual(out.returncode, 0, out.stderr)
        # After -c's '' and PYTHONPATH's entries, which are not repeated.
        self.assertEqual(out.stdout.strip(), repr(["", HERE, "/pp", "/r1", "/r2"]))


class AfterImport(unittest.TestCase):
    def test_patches_when_imported(self):
        out = run("""
            import sys, startup
            startup.after_import("colorsys", lambda m: setattr(m, "PATCHED", True))
            assert "colorsys" not in sys.modules
            import colorsys
            print(colorsys.PATCHED, any(isinstance(f, startup._AfterImport) for f in sys.meta_path))
        """)
        self.assertEqual(out.stdout.strip(), "True False", out.stderr)

    def test_patches_at_once_when_loaded(self):
        import json
        startup.after_import("json", lambda m: setattr(m, "PATCHED_NOW", True))
        self.assertTrue(json.PATCHED_NOW)
        del json.PATCHED_NOW


class Main(unittest.TestCase):
    def test_settings_as_json(self):
        # A root with a byte that is not UTF-8 arrives as a lone surrogate.
        out = run(r"""
            import os, sys, startup
            startup.main(b'{"roots": ["/r1", "/r\\udcff", "/\xc3\xa9"]}')
            print(os.fsdecode(b"/r\xff") in sys.path, "/r1" in sys.path, "/\u00e9" in sys.path)
        """)
        self.assertEqual(out.stdout.split(), ["True", "True", "True"], out.stderr)

    def test_bad_settings_are_refused(self):
        import startup

        with self.assertRaises(ValueError):
            startup._loads('{"roots": []} extra')

    def test_empty_settings_change_nothing(self):
        out = run("""
            import sys
            before = list(sys.path)
            import startup
            startup.main(b"{}")
            print(sys.path == before)
        """)
        self.assertEqual(out.stdout.split(), ["True"], out.stderr)


class RelaxX509Strict(unittest.TestCase):
    def test_strict_flag_cleared_everywhere(self):
        out = run("""
            import startup
            startup.after_import("ssl", startup.relax_x509_strict)
            import ssl
            ctx = ssl.create_default_context()
            print(bool(ctx.verify_flags & ssl.VERIFY_X509_STRICT))
            ctx.verify_flags |= ssl.VERIFY_X509_STRICT | ssl.VERIFY_X509_TRUSTED_FIRST
            print(bool(ctx.verify_flags & ssl.VERIFY_X509_STRICT), bool(ctx.verify_flags & ssl.VERIFY_X509_TRUSTED_FIRST))
            print(ctx.verify_mode == ssl.CERT_REQUIRED, ctx.check_hostname)
        """)
        self.assertEqual(out.stdout.split(), ["False", "False", "True", "True", "True"], out.stderr)


class ChainSitecustomize(unittest.TestCase):
    def test_real_sitecustomize_runs(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "sitecustomize.py"), "w") as f:
                f.write("import builtins\nbuiltins.REAL_SITECUSTOMIZE = __name__\n")
            out = run("""
                import sys, builtins, startup
                sys.path.insert(0, sys.argv[1])
                startup.chain_sitecustomize()
                print(builtins.REAL_SITECUSTOMIZE, sys.modules["sitecustomize"].__file__.startswith(sys.argv[1]))
            """, d)
            self.assertEqual(out.stdout.split(), ["sitecustomize", "True"], out.stderr)

    def test_none_is_fine(self):
        out = run("import startup; startup.chain_sitecustomize(); print('ok')", env={
            k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
        self.assertEqual(out.stdout.strip(), "ok", out.stderr)


if __name__ == "__main__":
    unittest.main()
