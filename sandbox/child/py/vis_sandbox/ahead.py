"""Python files compiled ahead, while the session is idle, so that the
first checked edit of a file (patch()) compiles the statements it touches
and not the whole file.

The host checks an edit on its statements alone when it knows the file's
text compiled before the edit: a text it checked itself (a patch's
result, a file a block wrote), or one this process compiled ahead. Here
that is, between blocks while no request comes: the workspace's Python
files when the session starts (the newest first, within bounds), and the
Python files cat() or the blocks' code (open(), ...) read since. A compiled file's content hash is kept
under its path, and patch() sends the one of its path: the host takes it
only when it is the hash of the text it is about to edit, so a file
changed since (by anyone) is compiled whole, as before. The hash is this
process's word, as each verdict a patch gets from it is: the check helps
the session's code, it does not limit it.

Bounds: a file over MAX_FILE bytes is not compiled ahead (a request that
comes during a compile waits for it: some tens of ms for MAX_FILE); the
start's walk looks at MAX_SCAN_ENTRIES entries and queues MAX_SCAN_FILES
files of MAX_SCAN_BYTES in all; the queue and the hashes kept are bounded
(MAX_PENDING, MAX_KNOWN), the oldest going first.
"""

import os

from vis_sandbox import checks as _checks

MAX_FILE = 128 << 10
MAX_SCAN_ENTRIES = 5000
MAX_SCAN_FILES = 100
MAX_SCAN_BYTES = 4 << 20
MAX_PENDING = 256
MAX_KNOWN = 1024
QUIET = 0.05  # seconds of a quiet link before a file is compiled ahead

# Folders the start's walk leaves out (as the host's after-block walk
# does): version control, environments, caches and dependencies.
UNSCANNED = frozenset((
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__", "site-packages",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".idea", ".eggs"))

# Plain dicts, in the order of insertion (no import at the child's start).
_pending = {}  # absolute path -> None, the last noted compiled first
_known = {}  # absolute path -> (stamp, hash) of the text that compiled
_scan = []  # the workspace to walk, once


def is_python(path):
    return path.endswith((".py", ".pyi"))


def start(workspace):
    """Queues the workspace's Python files for the first idle time (and
    forgets the files the process's start read)."""
    _checks.take_read()
    if workspace:
        _scan.append(workspace)


def note(path):
    """Queues the Python file path (as the session's code named it) to be
    compiled ahead."""
    if not isinstance(path, (str, os.PathLike)):
        return
    path = os.path.abspath(os.fsdecode(path))
    if not is_python(path):
        return
    _pending.pop(path, None)
    _pending[path] = None
    while len(_pending) > MAX_PENDING:
        del _pending[next(iter(_pending))]


def note_read(paths, written=()):
    """Queues the Python files the block's code read (vis_sandbox.checks'
    notes), but those it wrote: the host checks those."""
    written = set(written)
    for path in paths:
        if path not in written:
            note(path)


def key_of(path):
    """The hash of the text the file path had when it compiled ahead
    (sandbox/host's sourceKey), or None."""
    try:
        known = _known.get(os.path.abspath(os.fsdecode(path)))
    except (TypeError, ValueError):
        return None
    return known[1] if known else None


def source_key(data):
    import hashlib

    return hashlib.sha256(data).hexdigest()[:32]


def idle(fd, quiet=QUIET):
    """Compiles the queued files one at a time while the link fd is quiet
    (quiet seconds without a request); returns when a request comes or
    nothing is left."""
    if not _scan and not _pending:
        return
    import select

    try:
        while _scan or _pending:
            if select.select([fd], [], [], quiet)[0]:
                return
            try:
                if _scan:
                    for path in reversed(walk(_scan.pop())):
                        note(path)
                else:
                    compile_ahead(_pending.popitem()[0])
            except Exception:  # noqa: BLE001 (a help: it must never stop the session's process)
                continue
    finally:
        _checks.take_read()  # this function's own reads


def compile_ahead(path):
    """Compiles the regular file path (at most MAX_FILE bytes, no symlink
    followed) and keeps its hash when it compiles; a file whose inode,
    size and time are those it had when it compiled is not read again."""
    import stat

    known = _known.pop(path, None)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE:
            return
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if known and known[0] == stamp:
            _known[path] = known
            return
        data = os.read(fd, MAX_FILE + 1)
    except OSError:
        return
    finally:
        os.close(fd)
    if len(data) > MAX_FILE or _checks.compile_file(data, path) is not None:
        return
    _known[path] = (stamp, source_key(data))
    while len(_known) > MAX_KNOWN:
        del _known[next(iter(_known))]


def walk(root):
    """The Python files under root, the newest first, within the walk's
    bounds; no symlink followed."""
    found, entries, folders = [], 0, [root]
    while folders and entries < MAX_SCAN_ENTRIES:
        try:
            it = os.scandir(folders.pop())
        except OSError:
            continue
        with it:
            for entry in it:
                entries += 1
                if entries > MAX_SCAN_ENTRIES:
                    break
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in UNSCANNED:
                            folders.append(entry.path)
                    elif is_python(entry.name) and entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        if st.st_size <= MAX_FILE:
                            found.append((-st.st_mtime_ns, st.st_size, entry.path))
                except OSError:
                    continue
    found.sort()
    out, total = [], 0
    for _, size, path in found[:MAX_SCAN_FILES]:
        if total + size > MAX_SCAN_BYTES:
            break
        total += size
        out.append(path)
    return out
