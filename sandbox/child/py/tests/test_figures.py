"""Tests of vis_sandbox.figures with a stand-in matplotlib package (the
real one is tested through the built binary, cmd/vis-agent)."""

import contextlib
import importlib
import io
import os
import sys
import tempfile
import textwrap
import unittest

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if PKG_ROOT not in sys.path:
    sys.path.insert(0, PKG_ROOT)

from vis_sandbox import figures  # noqa: E402

PYPLOT = textwrap.dedent('''
    _figs = {}

    class Figure:
        def __init__(self, num, fail):
            self.num, self.fail = num, fail

        def savefig(self, buf, format, bbox_inches=None):
            if self.fail:
                raise RuntimeError("cannot draw")
            buf.write(b"PNG %d" % self.num)

    def figure(num=None, fail=False):
        if num is None:
            num = max(_figs, default=0) + 1
        return _figs.setdefault(num, Figure(num, fail))

    def get_fignums():
        return sorted(_figs)

    def close(fig):
        _figs.pop(fig.num, None)

    def show(*args, **kwargs):
        return "pyplot's own"
''')


class FiguresTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        pkg = os.path.join(self.tmp.name, "matplotlib")
        os.mkdir(pkg)
        open(os.path.join(pkg, "__init__.py"), "w").close()
        with open(os.path.join(pkg, "pyplot.py"), "w") as f:
            f.write(PYPLOT)
        self.saved = list(sys.path), list(sys.meta_path), {k: v for k, v in sys.modules.items() if k.startswith("matplotlib")}
        for k in self.saved[2]:
            del sys.modules[k]
        sys.path.insert(0, self.tmp.name)
        importlib.invalidate_caches()
        self.attached = []
        self.block = 7
        self.figs = figures.Figures(self.attach, lambda: self.block)

    def tearDown(self):
        sys.path[:], sys.meta_path[:] = self.saved[0], self.saved[1]
        for k in [k for k in sys.modules if k.startswith("matplotlib")]:
            del sys.modules[k]
        sys.modules.update(self.saved[2])
        self.tmp.cleanup()

    def attach(self, data, filename=None, kind=None, media_type=None):
        if b"refuse" in data:
            raise ValueError("too large")
        self.attached.append((data, filename, kind, media_type))

    def test_show_in_the_block_that_imports_pyplot(self):
        self.figs.install()
        self.figs.begin()
        import matplotlib.pyplot as plt
        self.assertTrue(plt.show._vis_figures)
        self.assertEqual(plt.show.__wrapped__(), "pyplot's own")
        plt.figure()
        plt.figure()
        self.assertIsNone(plt.show())
        self.assertEqual(self.attached, [(b"PNG 1", "figure-7-1.png", "figure", "image/png"),
                                         (b"PNG 2", "figure-7-2.png", "figure", "image/png")])
        self.assertEqual(plt.get_fignums(), [])
        # the loader is the original one for the rest
        self.assertIn("def figure", plt.__loader__.get_source("matplotlib.pyplot"))
        importlib.reload(plt)
        self.assertTrue(plt.show._vis_figures, "a reload is patched again")

    def test_open_figures_at_the_end_and_failures(self):
        import matplotlib.pyplot as plt
        self.figs.install()  # after the import: patched at once
        self.assertTrue(plt.show._vis_figures)
        self.figs.begin()
        plt.figure()
        plt.figure(fail=True)
        plt.figure(3).savefig = lambda buf, **kw: buf.write(b"refuse")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.figs.flush()
        self.assertEqual([a[1] for a in self.attached], ["figure-7-1.png"])
        self.assertEqual(err.getvalue(), "[figure 2 was not attached: RuntimeError: cannot draw]\n"
                                         "[figure 3 was not attached: ValueError: too large]\n")
        self.assertEqual(plt.get_fignums(), [], "closed either way")
        self.block = 8
        self.figs.begin()
        plt.figure()
        self.figs.flush()
        self.assertEqual(self.attached[-1][1], "figure-8-1.png")

    def test_nothing_without_pyplot_and_one_finder(self):
        self.figs.flush()
        self.figs.install()
        self.figs.install()
        self.assertEqual(sum(isinstance(f, figures._Finder) for f in sys.meta_path), 1)
        import json  # noqa: F401 (other imports pass the finder by)
        self.assertNotIn("matplotlib.pyplot", sys.modules)
        self.assertEqual(self.attached, [])


if __name__ == "__main__":
    unittest.main()
