"""File checks in the sandbox child (see sandbox/check): compiling a
file's bytes as Python reads files, for patch() and for the host's check
of the files a block changed, and noting which checked files the
session's code writes, so that the host reads those and no others.

The notes come from an audit hook: the "open" events of files opened for
writing (open(), os.open(), and what calls them: pathlib, shutil, json's
users...) and the destinations of "os.rename" (os.rename, os.replace:
atomic writes). They are exact for Python code; writes by C code that
calls the C library itself, and by other processes (shell() commands),
raise no event, and the host looks for those another way. A session's
code can see, but not remove, the hook: the notes only decide what the
host checks, never what anyone may do.
"""

import os
import sys

# The file names sandbox/check checks (check.KindOf), lower-cased.
SUFFIXES = (".py", ".pyi", ".json", ".toml", ".yaml", ".yml")
# How many distinct files a block's notes hold; past it the host looks
# for the changed files itself.
MAX_NOTED = 256

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def syntax_fields(e):
    """Python's refusal of a source as the repair engine reads it
    (sandbox/repair.SyntaxError)."""
    if isinstance(e, SyntaxError):
        return {"message": e.msg or "invalid syntax", "line": e.lineno or 0, "column": e.offset or 0,
                "text": e.text or ""}
    return {"message": str(e), "line": 0, "column": 0, "text": ""}


def compile_file(data, filename):
    """None when data, a file's bytes, compiles as the module filename (a
    byte order mark and a coding declaration read as for any file; no
    top-level await), else the fields of Python's refusal. Warnings (an
    invalid escape) are not shown: the file is checked, not run."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:  # ValueError: a NUL byte, before 3.12
        return syntax_fields(e)
    except (RecursionError, MemoryError) as e:
        return {"message": f"{type(e).__name__}: {e}", "line": 0, "column": 0, "text": ""}
    return None


class Writes:
    """The checked files the session's code opened for writing or renamed
    onto since the last take(), as absolute paths."""

    def __init__(self):
        self.paths = set()
        self.more = False

    def take(self):
        """The files noted (sorted), and whether there were more than
        MAX_NOTED; the notes start again empty."""
        paths, more = sorted(self.paths), self.more
        self.paths, self.more = set(), False
        return paths, more

    def note(self, path):
        if isinstance(path, int):
            return
        path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not path.lower().endswith(SUFFIXES):
            return
        if not path.startswith("/"):
            path = os.path.join(os.getcwd(), path)
        if path in self.paths:
            return
        if len(self.paths) >= MAX_NOTED:
            self.more = True
            return
        self.paths.add(path)

    def hook(self, event, args):
        # Called for every audit event of every thread: the other events
        # cost a comparison or two.
        if event == "open":
            mode, flags = args[1], args[2]
            if mode is None:  # os.open
                if not flags & _WRITE_FLAGS:
                    return
            elif not ("w" in mode or "a" in mode or "x" in mode or "+" in mode):
                return
            path = args[0]
        elif event == "os.rename":  # also os.replace
            if args[3] not in (None, -1):
                return  # relative to a folder descriptor: not followed
            path = args[1]
        else:
            return
        try:
            self.note(path)
        except Exception:  # noqa: S110 (a note must never fail the write)
            pass


writes = Writes()


def install():
    """Starts noting the session's writes (once, at the child's start)."""
    sys.addaudithook(writes.hook)
