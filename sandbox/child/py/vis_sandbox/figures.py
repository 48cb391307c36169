"""Matplotlib figures of a sandbox session become attachments.

Figures a block leaves open, and those it shows with plt.show(), are saved
as PNG, attached with kind "figure" and closed: the block's result lists
them, the REPL's attachments panel shows them and MCP clients get them as
images. The session renders with Agg (MPLBACKEND, set by the child's
command), whose own show() does nothing without a display.

plt.show() is the session's once matplotlib.pyplot is imported: a finder
first in sys.meta_path sees that one import (every other passes it by with
one string comparison), lets the other finders find the module, and wraps
its loader so that show is replaced right after pyplot's code ran, also in
the block that imports it.
"""

import io
import sys

PYPLOT = "matplotlib.pyplot"


class Figures:
    """attach(data, filename=, kind=, media_type=) stores an attachment;
    block() is the number of the block that runs."""

    def __init__(self, attach, block):
        self.attach = attach
        self.block = block
        self.count = 0  # figures attached by the block that runs

    def install(self):
        module = sys.modules.get(PYPLOT)
        if module is not None:
            self.patch(module)
        if not any(isinstance(f, _Finder) for f in sys.meta_path):
            sys.meta_path.insert(0, _Finder(self.patch))

    def patch(self, pyplot):
        """Makes pyplot.show attach and close the open figures."""
        if getattr(pyplot.show, "_vis_figures", False):
            return
        original = pyplot.show

        def show(*args, **kwargs):
            """Attaches the open figures as PNG and closes them (the sandbox's
            plt.show(); the arguments, such as block=, change nothing)."""
            self.flush()

        show.__wrapped__ = original
        show._vis_figures = True
        pyplot.show = show

    def begin(self):
        self.count = 0

    def flush(self):
        """Attaches every open figure as PNG and closes it. A figure that
        cannot be drawn or attached is closed too, with one line on stderr
        saying why."""
        pyplot = sys.modules.get(PYPLOT)
        if pyplot is None:
            return
        for num in pyplot.get_fignums():
            fig = pyplot.figure(num)
            name = f"figure-{self.block()}-{self.count + 1}.png"
            try:
                buf = io.BytesIO()
                fig.savefig(buf, format="png", bbox_inches="tight")
                self.attach(buf.getvalue(), filename=name, kind="figure", media_type="image/png")
                self.count += 1
            except Exception as e:  # a figure's own code may raise anything
                print(f"[figure {num} was not attached: {type(e).__name__}: {e}]", file=sys.stderr)
            finally:
                pyplot.close(fig)


class _Finder:
    """Finds nothing itself: for matplotlib.pyplot it asks the finders after
    it and wraps the loader of what they found."""

    def __init__(self, then):
        self.then = then

    def find_spec(self, name, path=None, target=None):
        if name != PYPLOT:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _After(spec.loader, self.then)
                return spec
        return None


class _After:
    """A loader that runs then(module) after the module's own code; it is
    the original loader for everything else (get_source, ...)."""

    def __init__(self, loader, then):
        self._loader = loader
        self._then = then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            self._then(module)
        except Exception:
            pass  # pyplot's own show stays

    def __getattr__(self, name):
        return getattr(self._loader, name)
