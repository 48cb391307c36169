"""Modules imported at their first use.

A new session's first block must not wait for modules that only later work
needs (ast for a block that defines a helper, inspect for defs(), traceback
for an error, hashlib for a spill file): the modules of this package name
those with module(), and the first attribute read imports the real module
and binds it in the proxy's place, so later reads cost nothing extra.
"""

import sys


class _Module:
    __slots__ = ("_name", "_globals", "_bound")

    def __init__(self, name, namespace, bound):
        self._name = name
        self._globals = namespace
        self._bound = bound

    def __getattr__(self, attr):
        __import__(self._name)
        mod = sys.modules[self._name]
        if self._globals.get(self._bound) is self:
            self._globals[self._bound] = mod
        return getattr(mod, attr)

    def __repr__(self):
        return f"<module {self._name!r} (not imported yet)>"


def module(name, namespace, bound=None):
    """A stand-in for module name, to be bound in namespace (a module's
    globals()) as bound (default: the last part of name)."""
    return _Module(name, namespace, bound or name.rpartition(".")[2])
