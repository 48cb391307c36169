"""The files of a session's snapshot: their format, written atomically and read back.

Files in the session folder:
- snapshot.bin: b"VISSNAP1", the header's length (u64 LE) and CRC-32 (u32 LE),
  the header (JSON: imports, helper records with source, sys.path entries,
  variables with offset, length and CRC-32 of their data, spills, the reasons of
  what was not saved, next_block), then the values' data one after another: a
  pickle, or for a value of an exact type in MARSHALLED b"M" and its marshal.
- spill/<sha256>: the UTF-8 (surrogatepass) or raw bytes of one large str/bytes.
- spill/p-<random>: one large value's pickle (protocol 5), then its out-of-band
  buffers (numpy arrays, pandas frames' blocks), each at a multiple of ALIGN;
  the header row has each part's length and CRC-32. Restored by mapping the file
  copy-on-write: the arrays come back writable without a copy being read.
- blocks: the next block's number, rewritten in place after every block, so
  numbering goes on after a restart even when the snapshot did not change.

A value goes into snapshot.bin when its pickle (buffers in band) is at most
VALUE_LIMIT and the ones before it (in name order) leave room in VALUES_BUDGET;
else into a spill file, up to the session's limits for one value and for all
(sandbox.max_value_mb and sandbox.max_snapshot_mb).
"""

import marshal
import os
import struct
import sys
import zlib

from vis_sandbox import defs as _defs
from vis_sandbox import wire
from vis_sandbox.lazy import module as _lazy

mmap = _lazy("mmap", globals())  # for spilled pickles only
# The C pickler itself (what pickle.Pickler and pickle.loads are): the
# pickle module around it imports re, which a first block need not wait for.
pickle = _lazy("_pickle", globals(), "pickle")

MiB = 1 << 20
# snapshot.bin holds small values; it is read whole at every restore
VALUE_LIMIT = 1 * MiB
VALUES_BUDGET = 4 * MiB
# The defaults of sandbox.max_value_mb and sandbox.max_snapshot_mb.
MAX_VALUE_MB = 256
MAX_SNAPSHOT_MB = 1024
# Out-of-band buffers smaller than this stay in the pickle: a list of many
# small arrays is one stream, not thousands of parts.
OOB_MIN = 64 << 10
ALIGN = 64  # where a spilled buffer starts in its file: arrays come back aligned

SNAPSHOT = "snapshot.bin"
SPILL_DIR = "spill"
COUNTER = "blocks"
# What the last block may have changed while its save is under way (the
# block's number and names), empty once saved: a kill in between is named
# in the next restart's notice.
UNSAVED = "unsaved"
UNSAVED_MAX = 8192
MAGIC = b"VISSNAP1"
FORMAT = 1
# a snapshot's header (its helpers' sources, its rows) is read whole
HEADER_MAX = 64 * MiB
PROTOCOL = 5



def over_value(limit):
    return f"over the {limit // MiB} MiB limit for one saved value (sandbox.max_value_mb)"


def over_budget(limit):
    return f"the {limit // MiB} MiB budget of the snapshot is full (sandbox.max_snapshot_mb)"


# Exact types whose values marshal (built into the interpreter) writes and
# reads back as they were: saving them needs no pickler, whose import
# (functools, collections, copyreg) a session's first block would wait for.
MARSHALLED = frozenset({type(None), bool, int, float, complex, str, bytes})
MARSHAL_TAG = b"M"  # a pickle (protocol 2 and later) starts with b"\x80"


def loads(data, buffers=()):
    """A saved value from its data (see changes.pickled) and out-of-band buffers."""
    if data[:1] == MARSHAL_TAG:
        return marshal.loads(data[1:])
    return pickle.loads(data, buffers=buffers)


def layout(sizes):
    """Where each part of a spilled pickle starts in its file (the stream at
    0, each buffer at the next multiple of ALIGN), and the file's size."""
    offsets, end = [], 0
    for i, n in enumerate(sizes):
        if i:
            end = -(-end // ALIGN) * ALIGN
        offsets.append(end)
        end += n
    return offsets, end


def unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


# mmap keeps a copy of the descriptor unless told not to (3.13+): one per
# spilled value otherwise.
_MAP_OPTIONS = {"trackfd": False} if sys.version_info >= (3, 13) else {}


def map_copy(path, size):
    """A writable, copy-on-write view of the file at path, which must hold
    size bytes: restored arrays use its pages as they are, and their
    changes stay in this process."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        have = os.fstat(fd).st_size
        if have != size:
            raise ValueError(f"its spill file has {have} bytes, not {size}")
        return memoryview(mmap.mmap(fd, size, access=mmap.ACCESS_COPY, **_MAP_OPTIONS))
    finally:
        os.close(fd)


def spills_of(fd):
    """{spill file: size} of the snapshot open at fd, its header read
    bounded (the folder is the session's to write); ValueError when it is
    not a snapshot."""
    pos = len(MAGIC) + 12
    start = os.pread(fd, pos, 0)
    if len(start) < pos or start[:len(MAGIC)] != MAGIC:
        raise ValueError("it is not a vis-agent snapshot")
    n, crc = struct.unpack("<QI", start[len(MAGIC):pos])
    if n > HEADER_MAX:
        raise ValueError("its header is too large")
    head = os.pread(fd, n, pos)
    if len(head) != n or zlib.crc32(head) != crc:
        raise ValueError("it is truncated or damaged")
    header = wire.loads(head)
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"its format is not {FORMAT}")
    out = {}
    for r in header.get("spills") or []:
        if isinstance(r, dict) and isinstance(r.get("file"), str) and type(r.get("size")) is int:
            out[r["file"]] = r["size"]
    return out


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path, chunks, sync=True):
    """Writes path so that a kill at any moment leaves the old file or the
    new one: a temp file beside it, fsync, rename. The folder is not synced
    here (a millisecond or more on every changed block): after a power loss
    the rename may be undone, which brings back the previous file, whole.
    Spill files are synced with their folder before a snapshot names them.
    sync=False leaves out the fsync (milliseconds, more on a busy disk),
    for a file that replaces none: it protects a previous file from a power
    loss, and a torn new file reads as a damaged snapshot, no worse than
    none."""
    tmp = f"{path}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:  # buffered: it writes each chunk whole
            for c in chunks:
                f.write(c)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove_temps(folder, prefix=""):
    """Deletes temp files a killed writer left (only ours: others may write
    into the session folder too)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for n in names:
        if n.startswith(prefix) and ".tmp-" in n:
            try:
                os.unlink(os.path.join(folder, n))
            except OSError:
                pass


def write(folder, next_block, manifest, helpers, entries):
    """Writes the snapshot that manifest (see State.save) describes into
    folder: the spill files it names that are not there yet (synced with
    their folder), then snapshot.bin."""
    imports, _, saved, spills, not_saved, lost_before, paths = manifest
    os.makedirs(folder, exist_ok=True)
    spill_dir = os.path.join(folder, SPILL_DIR)
    if spills:
        os.makedirs(spill_dir, exist_ok=True)
        wrote = False
        for name, file, _, _, _ in spills:
            path = os.path.join(spill_dir, file)
            if not os.path.exists(path):
                write_atomic(path, entries[name].spill_chunks())
                wrote = True
            entries[name].written()  # the encoded copy is not kept in memory
        if wrote:
            fsync_dir(spill_dir)
    var_rows, offset = [], 0
    for name, data in saved:
        var_rows.append({"name": name, "type": _defs.type_name(entries[name].obj), "offset": offset,
                         "length": len(data), "crc": zlib.crc32(data)})
        offset += len(data)
    header = {
        "format": FORMAT,
        "python": sys.version.split()[0],
        "next_block": next_block,
        "imports": [{"name": n, "stmt": s} for n, s in imports],
        "helpers": helpers,
        "variables": var_rows,
        "spills": [{"name": n, "file": d, "type": k, "size": s, **({"parts": fp} if fp else {})}
                   for n, d, k, s, fp in spills],
        "not_saved": dict(not_saved),
        "lost_before": dict(lost_before),
        "sys_path": [{"path": p, "front": f} for p, f in paths],
        "blob_bytes": offset,
    }
    head = wire.dumps(header, ascii=True).encode()
    chunks = [MAGIC, struct.pack("<QI", len(head), zlib.crc32(head)), head]
    chunks.extend(data for _, data in saved)
    path = os.path.join(folder, SNAPSHOT)
    # A new session's first snapshot replaces none: its block need not
    # wait for the disk.
    write_atomic(path, chunks, sync=os.path.exists(path))
    remove_temps(folder, SNAPSHOT)



def read(folder):
    """(header, the values' data) of the snapshot in folder; ValueError
    saying why it is not one."""
    with open(os.path.join(folder, SNAPSHOT), "rb") as f:
        data = f.read()
    if data[:len(MAGIC)] != MAGIC:
        raise ValueError("it is not a vis-agent snapshot")
    pos = len(MAGIC) + 12
    if len(data) < pos:
        raise ValueError("it is truncated")
    n, crc = struct.unpack("<QI", data[len(MAGIC):pos])
    head = data[pos:pos + n]
    if len(head) != n or zlib.crc32(head) != crc:
        raise ValueError("it is truncated or damaged")
    header = wire.loads(head)
    if header.get("format") != FORMAT:
        raise ValueError(f"its format {header.get('format')} is not {FORMAT}")
    blob = memoryview(data)[pos + n:]
    if len(blob) != header["blob_bytes"]:
        raise ValueError("it is truncated")
    return header, blob
