"""ctypes in a jailed session: a stand-in whose every name says why not.

The jail refuses _ctypes, the C half of ctypes: its pointers write any
memory of the interpreter (a block found the audit hook's list and emptied
it). Some packages import ctypes without using it on Linux (pandas.errors
for a Windows message, numpy for ndarray.ctypes), and a refused import
would stop them loading. The finder first on sys.meta_path gives them this
module instead: it imports, and any name read from it raises ImportError
with the reason, so code that treats ctypes as optional carries on.

Removing the finder gains a block nothing: the real ctypes stops at
`from _ctypes import ...`, which the C audit hook refuses.
"""

import sys
import types

# what importlib.machinery.ModuleSpec is, without importing importlib
from _frozen_importlib import ModuleSpec

REASON = "refused by the sandbox's jail (no ctypes: it writes any memory of the interpreter)"


class StandIn(types.ModuleType):
    """The module `import ctypes` (or ctypes.util, ...) gives."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            # what importlib, pickle and inspect probe for
            raise AttributeError(name)
        raise ImportError(f"{self.__name__}.{name}: {REASON}", name=self.__name__)

    def __repr__(self):
        return f"<module {self.__name__!r} (a stand-in: {REASON})>"


class _Loader:
    @staticmethod
    def create_module(spec):
        return StandIn(spec.name)

    @staticmethod
    def exec_module(module):
        pass


class Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "ctypes" and not name.startswith("ctypes."):
            return None
        return ModuleSpec(name, _Loader, is_package=True)


def install():
    """Serves the stand-in from now on (a ctypes imported before stays)."""
    if Finder not in sys.meta_path:
        sys.meta_path.insert(0, Finder)
