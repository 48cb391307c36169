"""Edits that take effect: the session's modules whose source changed on
disk after they were imported, and reload() of a package.

An agent edits a module (patch(), a write, an editor) that the session has
imported, runs the tests in process and sees them pass against the code
already loaded. After each block the driver asks which of the modules
imported from the session's writable roots have a source whose mtime or
size changed since they were first seen, says so once per change, and
removes each one's cached bytecode: CPython trusts a .pyc whose recorded
mtime (whole seconds) and size match the source, so an edit of the same
size within the same second would otherwise be served stale even after a
restart.
"""

import os
import sys
import types

# The session's watch, which the driver makes (reload() forgets what it
# imported afresh).
watch = None

# How many modules a check looks at: a project's own, not site-packages.
MAX_MODULES = 4000
# How many changed modules one note names.
MAX_NAMED = 5


class Watch:
    """The modules of sys.modules loaded from under roots, as first seen."""

    def __init__(self, roots):
        self.roots = tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)
        self.seen = {}  # module name -> (file, (mtime_ns, size))
        self.first = {}  # module name -> (file, (mtime_ns, size)) when first seen
        self.count = -1  # len(sys.modules) at the last look for new modules

    def _under(self, path):
        return path.startswith(self.roots)

    def _discover(self):
        """Adds the modules loaded from under the roots not seen yet: only
        when sys.modules grew or shrank (a block that imports nothing pays
        for the modules of the roots alone)."""
        self.count = len(sys.modules)
        n = 0
        for name, module in list(sys.modules.items()):
            if name in self.seen:
                continue
            path = getattr(module, "__file__", None)
            if not isinstance(path, str) or not path.endswith(".py") or not self._under(path):
                continue
            n += 1
            if len(self.seen) + n > MAX_MODULES:
                break
            try:
                st = os.stat(path)
            except OSError:
                continue
            self.seen[name] = self.first[name] = (path, (st.st_mtime_ns, st.st_size))

    def changed(self):
        """Modules whose source changed since last seen, as (name, file),
        each once per change; their cached bytecode is removed."""
        if len(sys.modules) != self.count:
            self._discover()
        out = []
        for name, (path, key) in list(self.seen.items()):
            module = sys.modules.get(name)
            if module is None or getattr(module, "__file__", None) != path:
                del self.seen[name]
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            now = (st.st_mtime_ns, st.st_size)
            if now == key:
                continue
            self.seen[name] = (path, now)
            drop_bytecode(path)
            out.append((name, path))
        return out

    def stale(self):
        """Whether a module seen is no longer as first seen on disk (changed
        since it was loaded), without noting it as changed()."""
        if len(sys.modules) != self.count:
            self._discover()
        for name, (path, key) in list(self.first.items()):
            if name not in self.seen:
                continue
            try:
                st = os.stat(path)
            except OSError:
                return True
            if (st.st_mtime_ns, st.st_size) != key:
                return True
        return False

    def forget(self, names):
        """Forgets names (imported afresh): the next look finds them again."""
        for name in names:
            self.seen.pop(name, None)
            self.first.pop(name, None)
        self.count = -1


def drop_bytecode(path):
    """Removes the cached bytecode of source path, if any."""
    import importlib.util  # not on a new session's way to its first block

    try:
        os.remove(importlib.util.cache_from_source(path))
    except (OSError, NotImplementedError, ValueError):
        pass


def note(changed, cwd):
    """The lines that say which modules changed and how to take them."""
    if not changed:
        return ""
    lines = []
    for name, path in changed[:MAX_NAMED]:
        rel = os.path.relpath(path, cwd) if path.startswith(os.path.join(cwd, "")) else path
        top = name.split(".")[0]
        lines.append(f"Note: {rel} changed on disk since {name} was imported: reload({top!r}) or restart to use it.")
    if len(changed) > MAX_NAMED:
        lines.append(f"Note: {len(changed) - MAX_NAMED} more imported modules changed on disk.")
    return "\n".join(lines) + "\n"


class Reloaded:
    """What reload() did: the modules imported afresh, the session's names
    bound to the new ones, and those that could not be."""

    def __init__(self, name, modules, rebound, failed):
        self.name, self.modules, self.rebound, self.failed = name, modules, rebound, failed

    def __repr__(self):
        text = f"reloaded {self.name}: {len(self.modules)} module{'s' if len(self.modules) != 1 else ''} imported afresh"
        if self.rebound:
            text += "; names bound to the new code: " + ", ".join(sorted(self.rebound))
        for module, why in self.failed:
            text += f"\n  {module} did not import again: {why}"
        text += "\n  (objects made before keep their old classes and functions)"
        return text


def reload(name, ns):
    """Imports package or module name afresh, with every submodule that was
    imported, in the order it imports them, and binds the session's names
    that held its modules, classes and functions to the new ones."""
    import importlib
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, such as reload('attr'), not {type(name).__name__}")
    if isinstance(ns.get(name), types.ModuleType):
        name = ns[name].__name__
    if name not in sys.modules:
        raise ValueError(f"{name} is not imported in this session")
    old = {n: m for n, m in sys.modules.items() if n == name or n.startswith(name + ".")}
    for module in old.values():
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.endswith(".py"):
            drop_bytecode(path)
    for n in old:
        del sys.modules[n]
    importlib.invalidate_caches()
    try:
        importlib.import_module(name)
    except BaseException:
        # the old package stays as it was
        for n in [n for n in sys.modules if n == name or n.startswith(name + ".")]:
            del sys.modules[n]
        sys.modules.update(old)
        raise
    failed = []
    for n in old:
        if n not in sys.modules:
            try:
                importlib.import_module(n)
            except Exception as e:
                failed.append((n, f"{type(e).__name__}: {e}"))
    if watch is not None:
        watch.forget(old)
    rebound = []
    for key, value in list(ns.items()):
        new = _renewed(value, old)
        if new is not None and new is not value:
            ns[key] = new
            rebound.append(key)
    fresh = [n for n in old if n in sys.modules]
    return Reloaded(name, fresh, rebound, failed)


def _renewed(value, old):
    """What value (a module of old, or a class or function of one) is in
    the newly imported code; None when it is not of old or is gone."""
    if isinstance(value, types.ModuleType):
        return sys.modules.get(value.__name__) if value.__name__ in old else None
    module = getattr(value, "__module__", None)
    if module not in old or not isinstance(value, (type, types.FunctionType)):
        return None
    obj = sys.modules.get(module)
    for part in getattr(value, "__qualname__", "").split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj
