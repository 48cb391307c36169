"""The blocks' sources, for tracebacks, inspect and warnings: linecache
entries named "<block N>".

linecache imports tokenize and so re (on CPython 3.10 to 3.12), which a
new session's first block should not wait for. Until something imports
linecache, the sources wait here, and a finder first on sys.meta_path
hands them over the moment linecache is imported, by whatever code.
"""

import sys

_pending = {}


def register(filename, src):
    """Makes src the text of filename for linecache."""
    entry = (len(src), None, src.splitlines(True), filename)
    lc = sys.modules.get("linecache")
    if lc is not None:
        lc.cache[filename] = entry
    else:
        _pending[filename] = entry


class _Finder:
    """Finds linecache the way the finders after it do, and fills its cache
    with the pending sources once it has run."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "linecache":
            return None
        sys.meta_path.remove(_Finder)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_fill(module):
            exec_module(module)
            module.cache.update(_pending)
            _pending.clear()

        spec.loader.exec_module = exec_and_fill
        return spec


def install():
    """Starts holding sources here until linecache is imported."""
    if "linecache" not in sys.modules and _Finder not in sys.meta_path:
        sys.meta_path.insert(0, _Finder)
