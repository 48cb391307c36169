"""A warm standby: a session's second interpreter, jailed like its first, that
imports what the session's snapshot needs ahead of a restart and then waits.

The host swaps it in when the session's child stops: only then does it read
the snapshot. It never runs a block. Only third-party modules found outside
the workspace are imported ahead (a package of a project's .venv counts:
it is what the restore would import), never the workspace's own code; and
at the swap every file those imports loaded is checked again: one that
changed since makes the standby stale, so that the restore imports it
fresh in a new process.
"""

import os
import sys

# Modules a snapshot needs that are worth importing ahead: not the standard
# library's (quick, and mostly imported already), not vis-agent's own.
_SKIP = frozenset(sys.stdlib_module_names) | {"__main__", "vis_sandbox", "_vis_host"}
MAX_PRELOAD = 64


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def outside_workspace(path, workspace):
    """Whether a module loaded from path is not the workspace's own code: it
    lies outside the workspace, or in a site-packages folder inside it."""
    if not workspace:
        return True
    real = os.path.realpath(path)
    return not _inside(real, workspace) or "site-packages" in real.split(os.sep)


def worth_preloading(name, workspace, memo):
    """Whether the imported top-level module name is one a standby imports
    ahead (memo caches the answers of one process)."""
    ok = memo.get(name)
    if ok is None:
        mod = sys.modules.get(name)
        path = getattr(mod, "__file__", None) if mod is not None else None
        ok = (name not in _SKIP and not name.startswith("_") and isinstance(path, str)
              and outside_workspace(path, workspace))
        memo[name] = ok
    return ok


def preload(names, workspace):
    """Imports the top-level modules names that are found outside the
    workspace; returns the signatures of the files they loaded."""
    import importlib.util
    before = set(sys.modules)
    for name in list(names)[:MAX_PRELOAD]:
        if not isinstance(name, str) or not name.isidentifier() or name in _SKIP or name in sys.modules:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        origin = spec.origin if spec is not None else None
        if not origin or not os.path.isabs(origin) or not outside_workspace(origin, workspace):
            continue
        loaded = set(sys.modules)
        try:
            __import__(name)
        except BaseException:  # noqa: B036 - the restore imports it again and reports what it raises
            # no half-imported package left for the restore to find
            for partial in set(sys.modules) - loaded:
                del sys.modules[partial]
    return signatures(n for n in set(sys.modules) - before)


def signatures(names):
    out = {}
    for name in names:
        path = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(path, str) and path not in out:
            out[path] = _signature(path)
    return out


def _signature(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def stale(sigs):
    """The first file whose signature changed since, or None."""
    for path, sig in sigs.items():
        if _signature(path) != sig:
            return path
    return None


def wait(link, info):
    """Serves as a standby: preloads, says "standby", and waits for the
    host's wake, whose restart reason, discard, drop and rewind it returns. It exits
    when the host closes the link, and, after "stale", when a preloaded
    module changed."""
    from vis_sandbox import packages as _packages
    # The session's packages (install()) first, as a child's restore has them.
    _packages.start(info.get("packages"))
    workspace = (info.get("session") or {}).get("workspace")
    sigs = preload(info.get("preload") or (), os.path.realpath(workspace) if workspace else None)
    link.send({"ev": "standby"})
    req = link.receive()
    if req is None or req.get("op") != "restore":
        os._exit(0)
    changed = stale(sigs)
    if changed is not None:
        link.send({"ev": "stale", "message": f"{changed} changed after the standby imported it"})
        os._exit(0)
    return {"restart_reason": req.get("restart_reason"), "discard": req.get("discard"), "drop": req.get("drop"),
            "rewind": req.get("rewind")}
