"""The session's history: the snapshot after each of its last blocks, so
that a rewind can bring back the state after any of them.

- history/<block>-<parent>: the snapshot.bin in force after that block
  (parent: the block whose state it ran on, 0 for none), a hard link
  to it (a snapshot.bin is replaced by a rename, never changed in place, so
  the link keeps the old one whole). A block that changed nothing links
  the same file again: a history costs a directory entry a block, plus
  the spill files only older blocks name.
- history/<block>.files: the files that block was seen to write (the
  after-block check's: Python, JSON, TOML, YAML), one a line, only when
  there are any, for a rewind's notice: files are not rewound.
- Spill files are shared: a value unchanged between blocks keeps its file
  (spill/<sha256>, or spill/p-<random> kept by fingerprint), and a file
  goes only when no snapshot kept names it.

The history keeps the last `keep` blocks (sandbox.history_blocks; none
when keep is 0 or less: then it records nothing), the newest first, while the snapshots and the spill files they name fit in
max_bytes (sandbox.max_snapshot_mb); the current snapshot is always kept.
Every file is written beside its name and renamed, and spill files go
only after the entries that name them: a kill at any moment leaves every
entry readable.

The folder is the session's own (a block may write there): entries are
read bounded, through no symlink, and an entry that cannot be read is no
entry.
"""

import os
import stat

HISTORY_DIR = "history"
KEEP_BLOCKS = 50  # the default of sandbox.history_blocks
# what a block's .files note keeps
FILES_MAX = 64
FILES_BYTES = 16 << 10


def read_bounded(path, limit):
    """The first limit bytes of the regular file at path, None for anything
    else: the state folder is the session's code's to write, which may
    leave a link, a FIFO or a device there (read without following or
    waiting)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


class History:
    def __init__(self, folder, keep, max_bytes, spills_of):
        """folder: the state folder; spills_of(fd) -> {spill file: size}
        for the snapshot open at fd (raises ValueError when it cannot be
        read)."""
        self.folder = folder
        self.dir = os.path.join(folder, HISTORY_DIR)
        self.keep = max(0, keep)
        self.max_bytes = max_bytes
        self._spills_of = spills_of
        # block -> [parent, (st_dev, st_ino), snapshot bytes, {spill file: size}]
        self._entries = None
        self.dropped = []     # blocks the last prune dropped (for the log)

    # ---- reading -----------------------------------------------------------

    def _load(self):
        if self._entries is not None:
            return self._entries
        self._entries = {}
        try:
            names = os.listdir(self.dir)
        except OSError:
            return self._entries
        for n in names:
            if ".tmp-" in n:
                _unlink(os.path.join(self.dir, n))  # a killed writer's
                continue
            block, _, parent = n.partition("-")
            if not (block.isdigit() and parent.isdigit() and len(n) < 40):
                continue
            entry = self._read_entry(os.path.join(self.dir, n))
            if entry is not None:
                self._entries[int(block)] = [int(parent), *entry]
        return self._entries

    def _path(self, block):
        return os.path.join(self.dir, f"{block}-{self._entries[block][0]}")

    def _read_entry(self, path):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            return (st.st_dev, st.st_ino), st.st_size, self._spills_of(fd)
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)

    def blocks(self):
        """The blocks a rewind can go to, oldest first."""
        return sorted(self._load())

    def spill_files(self):
        """Every spill file a kept entry names."""
        out = set()
        for _, _, _, spills in self._load().values():
            out.update(spills)
        return out

    # ---- writing -----------------------------------------------------------

    def record(self, block, parent, snapshot):
        """Makes the snapshot file at path snapshot the entry of block
        (the state after it, run on the state after parent), then drops
        what is past the history's count and budget. Returns False when it
        could not."""
        if not self.keep:
            return False
        entries = self._load()
        try:
            st = os.stat(snapshot, follow_symlinks=False)
        except OSError:
            return False
        # A block that changed nothing: the file an entry already has, whose
        # spill files are known without reading it again.
        ino = (st.st_dev, st.st_ino)
        entry = next((tuple(e[1:]) for e in entries.values() if e[1] == ino and e[2] == st.st_size), None)
        known = entry is not None
        if not known:
            entry = self._read_entry(snapshot)
        if entry is None:
            return False
        old = entries.get(block)
        if old is not None:
            parent = old[0]  # saved again (the last save before a stop): the same block
        name = os.path.join(self.dir, f"{block}-{parent}")
        try:
            os.makedirs(self.dir, exist_ok=True)
            _place(snapshot, name)
        except OSError:
            return False
        entries[block] = [parent, *entry]
        self.dropped = []
        if known:
            # no new bytes: only the count can be over
            while len(entries) > self.keep:
                self._drop(min(entries))
        else:
            self._prune(block)
        return True

    def _drop(self, block):
        self.dropped.append(block)
        _unlink(self._path(block))
        _unlink(os.path.join(self.dir, f"{block}.files"))
        del self._entries[block]

    def note_files(self, block, files):
        """Records the files block wrote (relative to the workspace where
        they lie in it), for a rewind's notice."""
        if not files or not self.keep:
            return
        data = "\n".join(files[:FILES_MAX]).encode("utf-8", "surrogateescape")[:FILES_BYTES]
        try:
            os.makedirs(self.dir, exist_ok=True)
            tmp = os.path.join(self.dir, f"{block}.files.tmp-{os.getpid()}-{os.urandom(4).hex()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            _replace(tmp, os.path.join(self.dir, f"{block}.files"))
        except OSError:
            pass  # a note for a notice: the rewind works without it

    def files_of(self, blocks):
        """The files the blocks were seen to write, sorted."""
        out = set()
        for b in blocks:
            data = read_bounded(os.path.join(self.dir, f"{b}.files"), FILES_BYTES)
            if data:
                out.update(line for line in data.decode("utf-8", "replace").split("\n") if line)
        return sorted(out)

    def rewound(self, block, snapshot):
        """The blocks a rewind to block goes back past: those of the line
        of the snapshot in force (at path snapshot) that block's line does
        not hold, oldest first."""
        now = self.current(snapshot)
        keep = set(self.line(block))
        return sorted(b for b in self.line(now) if b not in keep) if now is not None else []

    def _prune(self, newest):
        order = sorted(self._entries, reverse=True)
        kept, inodes, files, total, drop = 0, set(), {}, 0, []
        for b in order:
            _, ino, size, spills = self._entries[b]
            more = (size if ino not in inodes else 0) + sum(s for f, s in spills.items() if f not in files)
            if b != newest and (drop or kept >= self.keep or total + more > self.max_bytes):
                drop.append(b)  # and every older one: the history has no gaps
                continue
            kept += 1
            inodes.add(ino)
            files.update(spills)
            total += more
        for b in drop:
            self._drop(b)

    def restore(self, block, snapshot):
        """Puts the entry of block in place of the snapshot file at path
        snapshot; raises ValueError saying why it cannot."""
        entries = self._load()
        if block not in entries:
            raise ValueError(self.missing(block))
        path = self._path(block)
        if self._read_entry(path) is None:
            del entries[block]
            raise ValueError(f"the snapshot after block {block} cannot be read")
        _place(path, snapshot)

    def current(self, snapshot):
        """The block whose entry the snapshot file at path snapshot is (the
        newest of those that link it), or None."""
        try:
            st = os.stat(snapshot, follow_symlinks=False)
        except OSError:
            return None
        same = [b for b, e in self._load().items() if e[1] == (st.st_dev, st.st_ino)]
        return max(same) if same else None

    def line(self, block):
        """block and the blocks before it whose state it ran on, newest
        first, as far as the history goes."""
        entries, out = self._load(), []
        while block in entries and block not in out:
            out.append(block)
            block = entries[block][0]
        return out

    def parent(self, block):
        """The block whose state block ran on, when the history holds it
        (where a rewind back one block from block goes), else None."""
        entries = self._load()
        parent = entries[block][0] if block in entries else None
        return parent if parent in entries else None

    def target(self, current, to=None, back=None):
        """The block a rewind goes to: to, or back blocks before current
        along its line (1 when neither is given); ValueError saying why
        there is none."""
        if to is not None:
            if to not in self._load():
                raise ValueError(self.missing(to))
            return to
        back = 1 if back is None else back
        line = self.line(current) if current is not None else []
        if back < len(line):
            return line[back]
        if not line:
            have = self.blocks()
            if not have:
                off = "" if self.keep else " (sandbox.history_blocks = 0 keeps none)"
                raise ValueError(f"there is no block to rewind to: no block of this session has a snapshot in the history{off}")
            raise ValueError("the session's state is none of the history's (it was discarded, or started empty): "
                             f"give the block to rewind to; the history holds blocks {spans(have)}")
        gone = f"back {back} " + ("block" if back == 1 else "blocks")
        raise ValueError(f"the history does not reach {gone} from block {current}: it goes back to block {line[-1]}"
                      f" ({len(line) - 1} back; it keeps the last {self.keep} blocks, sandbox.history_blocks)")

    def missing(self, block):
        """Why there is no entry for block."""
        have = self.blocks()
        kept = f"the history keeps the snapshots of the last {self.keep} blocks (sandbox.history_blocks) " \
               f"within {self.max_bytes >> 20} MiB (sandbox.max_snapshot_mb)"
        if not have:
            return f"there is no snapshot after block {block}: the history is empty ({kept})"
        span = f"block {have[0]}" if len(have) == 1 else f"blocks {spans(have)}"
        if block < have[0]:
            return f"block {block} is no longer in the history: {kept}; a rewind can go to {span}"
        if block > have[-1]:
            return f"block {block} has not run: the last block with a snapshot is {have[-1]}; a rewind can go to {span}"
        return f"there is no snapshot after block {block} (it did not run, or did not end); a rewind can go to {span}"


def spans(blocks):
    """1-3, 5, 7-9."""
    out, start, prev = [], blocks[0], blocks[0]
    for b in blocks[1:] + [None]:
        if b is not None and b == prev + 1:
            prev = b
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if b is not None:
            start = prev = b
    return ", ".join(out)


def _place(src, dst):
    """Makes dst the file at src, atomically: a hard link beside dst,
    renamed over it (a copy where links are refused: a jail without
    links across folders)."""
    try:
        os.link(src, dst, follow_symlinks=False)  # a new name: a link is atomic itself
        return
    except FileExistsError:
        pass
    except OSError:
        _copy_to(src, dst)
        return
    tmp = f"{dst}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        os.link(src, tmp, follow_symlinks=False)
    except OSError:
        _copy(src, tmp)
    _replace(tmp, dst)


def _copy_to(src, dst):
    """A copy of src at dst, whole or not at all."""
    tmp = f"{dst}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    _copy(src, tmp)
    _replace(tmp, dst)


def _replace(tmp, dst):
    try:
        os.replace(tmp, dst)
    except OSError:
        _unlink(tmp)
        raise


def _copy(src, dst):
    fd = os.open(src, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{src} is not a regular file")
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(out, "wb") as f:  # buffered: it writes each chunk whole
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
    finally:
        os.close(fd)


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass
