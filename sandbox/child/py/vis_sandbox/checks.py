"""File checks in the sandbox child (see sandbox/check): compiling a
file's bytes as Python reads files, for patch() and for the host's check
of the files a block changed, and the notes of which checked files the
session's code wrote, so that the host reads those and no others (and of
the paths inside a .git it wrote or linked, after which the host looks
at what changed there: sandbox/host's gitnotice.go).

The notes are taken in C (sandbox/child/written.c), by an audit hook: the
"open" events of files opened for writing (open(), os.open(), and what
calls them: pathlib, shutil, json's users...) and the destinations of
"os.rename" (os.rename, os.replace: atomic writes); and, apart, the
Python files opened for reading, to compile ahead (vis_sandbox.ahead). A C hook costs a
warm block nothing measurable; a Python one costs a call per audit event
of every block (the snapshot alone raises dozens). The notes are exact for
Python code; writes by C code that calls the C library itself, and by
other processes (shell() commands), raise no event, and the host looks
for those another way. A session's code can read the notes, but they
only decide what the host checks, never what anyone may do.
"""

from vis_sandbox.link import clip

try:
    import _vis_written  # built into the sandbox child only (sandbox/child/written.c)
except ImportError:
    _vis_written = None


def syntax_fields(e):
    """Python's refusal of a source as the repair engine reads it
    (sandbox/protocol.SyntaxError)."""
    if isinstance(e, SyntaxError):
        return {"message": clip(e.msg or "invalid syntax"), "line": e.lineno or 0, "column": e.offset or 0,
                "text": clip(e.text or "")}
    return {"message": clip(str(e)), "line": 0, "column": 0, "text": ""}


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


def take_read():
    """The Python files the session's code opened for reading since the
    last call (absolute paths, at most 32), for vis_sandbox.ahead."""
    if _vis_written is None:
        return []
    return _vis_written.take_read()


def take_written():
    """The checked files written since the last call (absolute paths,
    as the code named them), and whether there were more than the notes
    keep (256); outside a sandbox child, none."""
    if _vis_written is None:
        return [], False
    return _vis_written.take()
