"""Saves a sandbox session after each block and brings it back in a new interpreter.

The snapshot holds the session's imports, the source of its helper functions and
classes, the sys.path entries its blocks added inside the workspace, its picklable
variables, and large values in spill files. It is written atomically and only when
it changed; restore runs it statement by statement and reports what came back and
what did not, and why.

Files in the session folder:
- snapshot.bin: b"VISSNAP1", the header's length (u64 LE) and CRC-32 (u32 LE),
  the header (JSON: imports, helper records with source, sys.path entries,
  variables with offset, length and CRC-32 of their data, spills, the reasons of
  what was not saved, next_block), then the values' data one after another: a
  pickle, or for a value of an exact type in _MARSHALLED b"M" and its marshal.
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

Telling that nothing changed without pickling everything: a value is pickled
again only when its name is bound to another object, or the block (or a
session function or class it names, transitively) names it, or it holds a
mutable object that a re-pickled value holds too (aliases, found through the
garbage collector's references, one C call per level of nesting).
A spilled value pickled again is compared with its file by the lengths and
CRC-32s of its parts (pickling hands over an array's buffers without copying
them; the CRC reads them once, about 3 GB/s): its file is written again only
when they differ. A change made only through objects outside the session
(another module, a thread, a numpy view of an array kept under another name
that no block names) is seen by the next save with full=True.
"""

import builtins
import gc
import marshal
import os
import struct
import sys
import types
import zlib

from vis_sandbox import defs as _defs
from vis_sandbox import history as _history
from vis_sandbox import standby as _standby
from vis_sandbox import wire
from vis_sandbox.lazy import module as _lazy

ast = _lazy("ast", globals())
hashlib = _lazy("hashlib", globals())
linecache = _lazy("linecache", globals())
mmap = _lazy("mmap", globals())  # for spilled pickles only
# The C pickler itself (what pickle.Pickler and pickle.loads are): the
# pickle module around it imports re, which a first block need not wait for.
pickle = _lazy("_pickle", globals(), "pickle")
symtable = _lazy("symtable", globals())
textwrap = _lazy("textwrap", globals())

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


# Types whose values never change in place: a name still bound to the same
# object of one of these (with only such objects inside) needs no new pickle.
_IMMUTABLE = frozenset({type(None), bool, int, float, complex, str, bytes, tuple,
                        frozenset, range, type(Ellipsis)})
# Names through which a block can reach any global without naming it: when a
# block (or a helper it calls) uses one, every saved value is checked again.
_INDIRECT = frozenset({"globals", "vars", "locals", "exec", "eval", "modules",
                       "__main__", "__dict__", "__import__", "setattr", "delattr"})


# Exact types whose values marshal (built into the interpreter) writes and
# reads back as they were: saving them needs no pickler, whose import
# (functools, collections, copyreg) a session's first block would wait for.
_MARSHALLED = frozenset({type(None), bool, int, float, complex, str, bytes})
_MARSHAL_TAG = b"M"  # a pickle (protocol 2 and later) starts with b"\x80"


def _loads(data, buffers=()):
    """A saved value from its data (see _pickle) and out-of-band buffers."""
    if data[:1] == _MARSHAL_TAG:
        return marshal.loads(data[1:])
    return pickle.loads(data, buffers=buffers)


def _layout(sizes):
    """Where each part of a spilled pickle starts in its file (the stream at
    0, each buffer at the next multiple of ALIGN), and the file's size."""
    offsets, end = [], 0
    for i, n in enumerate(sizes):
        if i:
            end = -(-end // ALIGN) * ALIGN
        offsets.append(end)
        end += n
    return offsets, end


class _TooBig(Exception):
    pass


class _LimitedWriter:
    """A pickle target that gives up as soon as the pickle, with the
    out-of-band buffers handed over so far (oob), passes the limit, so an
    oversized value costs at most the limit in time and memory."""

    __slots__ = ("parts", "size", "oob", "limit")

    def __init__(self, limit):
        self.parts = []
        self.size = 0
        self.oob = 0
        self.limit = limit

    def write(self, data):
        # a large in-band buffer comes as it is (a PickleBuffer, a
        # memoryview), which has no len()
        n = len(data) if type(data) is bytes else memoryview(data).nbytes
        self.size += n
        if self.size + self.oob > self.limit:
            raise _TooBig
        self.parts.append(bytes(data))
        return n


class _Entry:
    """What the last save learned about one variable's value."""

    __slots__ = ("obj", "data", "reason", "too_big", "reach", "immutable", "raw", "digest", "size", "parts", "fp",
                 "file", "probe", "pins")

    def __init__(self, obj, data=None, reason=None, reach=frozenset(), immutable=False, too_big=False, parts=None):
        self.obj = obj
        self.data = data          # the pickle, when it fits in snapshot.bin (VALUE_LIMIT)
        self.reason = reason      # why it cannot be saved at all
        self.too_big = too_big    # its pickle is over the session's limit for one value
        self.reach = reach        # ids of mutable objects the pickle went through
        self.immutable = immutable
        self.raw = None           # str/bytes content for a spill file, while it is needed
        self.digest = None
        self.size = None
        # A spilled pickle: its stream and out-of-band buffers while they are
        # needed (they pin the value's memory), the (length, CRC-32) of each,
        # and its file once named.
        self.parts = parts
        self.fp = None
        self.file = None
        # _probe's fingerprint of the value as pickled, and its pins
        self.probe = None
        self.pins = None

    def kind(self):
        """How a spill file holds it: "str" or "bytes" (the raw value), or "pickle"."""
        t = type(self.obj)
        if self.data is None and self.parts is None and self.fp is None and t in (str, bytes):
            return t.__name__
        return "pickle"

    def spill_size(self):
        if self.size is None:
            if self.kind() != "pickle":
                v = self.obj
                self.size = len(v) if isinstance(v, bytes) or v.isascii() else len(self.spill_bytes())
            else:
                self.size = _layout([n for n, _ in self.fingerprint()])[1]
        return self.size

    def spill_bytes(self):
        if self.raw is None:
            v = self.obj
            self.raw = v.encode("utf-8", "surrogatepass") if isinstance(v, str) else bytes(v)
        return self.raw

    def spill_digest(self):
        if self.digest is None:
            self.digest = hashlib.sha256(self.spill_bytes()).hexdigest()
        return self.digest

    def spill_parts(self):
        """The parts of a spilled pickle: its stream, a list of chunks (as
        the pickler wrote them: no copy joins them), then its out-of-band
        buffers (a value that fits snapshot.bin but not its budget: its
        data alone)."""
        return self.parts if self.parts is not None else [[self.data]]

    def fingerprint(self):
        if self.fp is None:
            self.fp = tuple(map(_part_fingerprint, self.spill_parts()))
        return self.fp

    def spill_chunks(self):
        """What its spill file holds, in order."""
        if self.kind() != "pickle":
            return [self.spill_bytes()]
        parts = self.spill_parts()
        offsets, _ = _layout([n for n, _ in self.fingerprint()])
        chunks, end = [], 0
        for off, (n, _), p in zip(offsets, self.fingerprint(), parts, strict=True):
            if off > end:
                chunks.append(bytes(off - end))
            chunks.extend(p if type(p) is list else [p])
            end = off + n
        return chunks

    def written(self):
        """Lets go of what the spill file now holds."""
        self.raw = None
        self.parts = None


def _part_fingerprint(part):
    """(length, CRC-32) of a part: a buffer, or a list of chunks."""
    if type(part) is not list:
        return memoryview(part).nbytes, zlib.crc32(part)
    n = crc = 0
    for chunk in part:
        n += len(chunk)
        crc = zlib.crc32(chunk, crc)
    return n, crc


# The element types a probed object array may hold: immutable, so the same
# objects are the same values.
_PROBE_ELEMENTS = frozenset({str, bytes, int, float, bool, complex, type(None)})


class _Unprobed(Exception):
    pass


class _CrcWriter:
    __slots__ = ("n", "crc")

    def __init__(self):
        self.n = self.crc = 0

    def write(self, data):
        n = len(data) if type(data) is bytes else memoryview(data).nbytes
        self.n += n
        self.crc = zlib.crc32(data, self.crc)
        return n


def _prober_class():
    """_Prober, made at its first use: the pickler is imported only when a
    value is saved."""
    global _Prober
    if _Prober is None:

        class Prober(pickle.Pickler):
            """Pickles a value only to fingerprint it: its buffers by CRC-32, and
            each numpy object array (a frame's text columns) by the CRC-32 of its
            element pointers, not its elements, whose pickling is what makes a
            frame's save slow. Pins (shallow copies of those arrays) keep the
            elements alive from one probe to the next, so no other object can
            take an address: equal pointers are the same objects, and the same
            immutable objects are the same values."""

            def __init__(self, file, pins):
                super().__init__(file, PROTOCOL, buffer_callback=self._buffer)
                self.crcs = []
                self.old = pins
                self.pins = {}

            def _buffer(self, buf):
                try:
                    view = buf.raw()
                except BufferError:
                    return True
                self.crcs.append((view.nbytes, zlib.crc32(view)))
                return False

            def reducer_override(self, obj):
                np = sys.modules.get("numpy")
                if np is None or type(obj) is not np.ndarray or not obj.dtype.hasobject:
                    return NotImplemented
                if obj.dtype != object or not obj.flags.c_contiguous:
                    raise _Unprobed
                crc = 0
                if obj.nbytes:
                    import ctypes
                    crc = zlib.crc32((ctypes.c_char * obj.nbytes).from_address(obj.__array_interface__["data"][0]))
                key = (obj.shape, crc)
                pin = self.old.get(key)
                if pin is None:
                    if not _PROBE_ELEMENTS.issuperset(map(type, obj.ravel())):
                        raise _Unprobed
                    pin = obj.copy()
                self.pins[key] = pin
                return tuple, (key,)

        _Prober = Prober
    return _Prober


_Prober = None


def _probe_worthy(value):
    """Whether a spilled value is probed (_probe): pandas objects and numpy
    object arrays, whose text a pickle copies element by element."""
    t = type(value)
    root = (getattr(t, "__module__", "") or "").partition(".")[0]
    if root == "pandas":
        return True
    return root == "numpy" and getattr(getattr(value, "dtype", None), "hasobject", False)


def _probe(value, pins):
    """(fingerprint, pins) of value (see _Prober), or None when it cannot
    be probed; pins are those of the last probe of the same value."""
    w = _CrcWriter()
    p = _prober_class()(w, pins or {})
    try:
        p.dump(value)
    except Exception:  # _Unprobed, or anything a __reduce__ raises
        return None
    return (w.n, w.crc, tuple(p.crcs)), p.pins


def _pickle(value, limit):
    """An _Entry for value: its pickle (or marshal, see _MARSHALLED) in
    snapshot.bin when it fits VALUE_LIMIT with its buffers in band, else
    its stream and out-of-band buffers for a spill file; or why there is
    none (too_big: over limit bytes)."""
    if type(value) in _MARSHALLED:
        data = _MARSHAL_TAG + marshal.dumps(value)
        if len(data) <= VALUE_LIMIT:
            return _Entry(value, data=data, immutable=True)
        if len(data) > limit:
            return _Entry(value, too_big=True, immutable=True)
        return _Entry(value, parts=[[data]], immutable=True)
    w = _LimitedWriter(limit)
    buffers = []

    def out_of_band(buf):
        try:
            view = buf.raw()
        except BufferError:  # not contiguous: it goes in the stream
            return True
        if view.nbytes < OOB_MIN:
            return True
        w.oob += view.nbytes
        if w.size + w.oob > limit:
            raise _TooBig
        buffers.append(view)
        return False

    reason, too_big = None, False
    try:
        pickle.Pickler(w, PROTOCOL, buffer_callback=out_of_band).dump(value)
    except _TooBig:
        too_big = True
    except RecursionError:
        reason = f"{_defs.type_name(value)} cannot be pickled: it is nested too deeply"
    except Exception as e:  # any __reduce__ may raise anything
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        qual = getattr(value, "__qualname__", "")
        if isinstance(value, types.FunctionType) and ("<lambda>" in qual or "<locals>" in qual):
            msg = "it is a lambda or a nested function; define it with def at the top of a block to keep it"
        reason = f"{_defs.type_name(value)} cannot be pickled: {msg}"
    if reason is not None:
        return _Entry(value, reason=reason)
    reach = _reach(value)
    immutable = type(value) in _IMMUTABLE and not reach
    if too_big:
        buffers.clear()
        return _Entry(value, too_big=True, reach=reach, immutable=immutable)
    if buffers and w.size + w.oob <= VALUE_LIMIT:
        # small enough for snapshot.bin: pickled again, its buffers in band
        inband = _LimitedWriter(VALUE_LIMIT)
        try:
            pickle.Pickler(inband, PROTOCOL).dump(value)
            buffers, w = [], inband
        except _TooBig:
            pass  # the opcodes around the buffers tipped it over: spilled
    if not buffers and w.size <= VALUE_LIMIT:
        return _Entry(value, data=b"".join(w.parts), reach=reach, immutable=immutable)
    return _Entry(value, parts=[w.parts, *buffers], reach=reach, immutable=immutable)


# Objects a value may hold that are not its data: a change to them is not a
# change to the value's pickle (functions and classes pickle by name).
_NOT_DATA = _IMMUTABLE - {tuple, frozenset} | {
    type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
    types.CodeType, types.FrameType, types.GeneratorType, types.CoroutineType}
_THROUGH = frozenset({tuple, frozenset})  # never changed, but may hold what is
_REACH_CAP = 1 << 20


def _reach(value):
    """The ids of the mutable objects in value (itself included): what a
    change through another name would have to go through. One C call per
    level of nesting; a Python loop only over levels that mix kinds."""
    out, through = set(), set()
    level = [value]
    while level and len(out) < _REACH_CAP:
        kinds = set(map(type, level))
        if kinds <= _NOT_DATA:
            break
        ids = set(map(id, level))
        if (kinds.isdisjoint(_NOT_DATA) and kinds.isdisjoint(_THROUGH) and len(ids) == len(level)
                and ids.isdisjoint(out) and not any(issubclass(k, type) for k in kinds)):
            out |= ids
            nxt = level
        else:
            nxt = []
            for o in level:
                t = type(o)
                if t in _NOT_DATA or isinstance(o, type):
                    continue
                i = id(o)
                if i in out or i in through:
                    continue
                (through if t in _THROUGH else out).add(i)
                nxt.append(o)
        level = gc.get_referents(*nxt) if nxt else ()
    return frozenset(out)


def code_names(code, out):
    """Adds to out the global and attribute names code (and the code
    nested in it) reads, writes or deletes."""
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            code_names(c, out)


def _session_code(value, namespace, found):
    """Adds to found the names in the code that runs when value (a session
    function, a decorated one, a session class or an instance of one) is
    called or used."""
    stack, done = [value], set()
    while stack and len(done) < 10000:
        o = stack.pop()
        if id(o) in done:
            continue
        done.add(id(o))
        if isinstance(o, types.FunctionType):
            if o.__globals__ is namespace:
                code_names(o.__code__, found)
        elif not isinstance(o, type) and getattr(type(o), "__module__", None) == "__main__":
            stack.append(type(o))
        if isinstance(o, type):
            for c in o.__mro__:
                if c.__module__ == "__main__":
                    stack.extend(vars(c).values())
            continue
        for attr in ("__wrapped__", "__func__", "func", "fget", "fset", "fdel"):
            nxt = getattr(o, attr, None)
            if nxt is not None and not isinstance(nxt, type):
                stack.append(nxt)


def global_reads(source):
    """The global names a helper's source reads (decorators, defaults, bases
    and bodies), builtins left out."""
    try:
        top = symtable.symtable(source, "<helper>", "exec")
    except (SyntaxError, ValueError):
        return []
    names = set()

    def walk(table, is_top):
        for sym in table.get_symbols():
            if not sym.is_referenced():
                continue
            if is_top or sym.is_global():
                names.add(sym.get_name())
        for child in table.get_children():
            walk(child, False)

    walk(top, True)
    return sorted(n for n in names if not hasattr(builtins, n))


def _statements(body):
    """Every statement that runs at module level: the block's own and those
    inside its if/for/while/try/with/match bodies, in order."""
    for st in body:
        yield st
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(st, field, None)
            if isinstance(sub, list):
                yield from _statements(sub)
        for h in getattr(st, "handlers", ()):
            yield from _statements(h.body)
        for case in getattr(st, "cases", ()):
            yield from _statements(case.body)


def _bound(node, out):
    """Names a statement binds or deletes itself (nested statements, lambdas
    and comprehension variables left out)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.stmt, ast.Lambda)):
            continue
        if isinstance(child, ast.comprehension):
            for sub in [child.iter, *child.ifs]:
                _bound(sub, out)
            continue
        if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
            out.add(child.id)
        elif isinstance(child, ast.ExceptHandler) and child.name:
            out.add(child.name)
        elif type(child).__name__ in ("MatchAs", "MatchStar") and getattr(child, "name", None):
            out.add(child.name)
        elif type(child).__name__ == "MatchMapping" and child.rest:
            out.add(child.rest)
        _bound(child, out)


def _import_text(node):
    """(bound name, statement text, root) for each name an import binds."""
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:
                yield a.asname, f"import {a.name} as {a.asname}", None
            else:
                root = a.name.split(".")[0]
                yield root, f"import {a.name}", root
    else:
        mod = "." * node.level + (node.module or "")
        for a in node.names:
            if a.name == "*":
                yield None, f"from {mod} import *", None
            elif a.asname:
                yield a.asname, f"from {mod} import {a.name} as {a.asname}", None
            else:
                yield a.name, f"from {mod} import {a.name}", None


def _block_of(code_or_func):
    code = getattr(code_or_func, "__code__", code_or_func)
    fn = getattr(code, "co_filename", "")
    if fn.startswith("<block ") and fn.endswith(">"):
        try:
            return int(fn[7:-1])
        except ValueError:
            return None
    return None


def _size_of(value):
    """sys.getsizeof, which runs the value's own __sizeof__ (pandas computes
    its memory use there), or 0 when that raises."""
    try:
        return sys.getsizeof(value)
    except Exception:
        return 0


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


# mmap keeps a copy of the descriptor unless told not to (3.13+): one per
# spilled value otherwise.
_MAP_OPTIONS = {"trackfd": False} if sys.version_info >= (3, 13) else {}


def _map(path, size):
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


def _spills_of(fd):
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


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path, chunks, sync=True):
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


def _remove_temps(folder, prefix=""):
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


class State:
    """The snapshot of one session, kept in its folder."""

    def __init__(self, folder, protected=frozenset(), workspace=None, max_value_mb=MAX_VALUE_MB,
                 max_snapshot_mb=MAX_SNAPSHOT_MB, history_blocks=_history.KEEP_BLOCKS):
        self.folder = folder
        self.protected = frozenset(protected)
        self.next_block = 1
        # the limits of one saved value and of the whole snapshot, in bytes
        self.max_value = max_value_mb * MiB
        self.max_snapshot = max_snapshot_mb * MiB
        # the snapshots after the last blocks, for a rewind; current is the
        # block whose state this process holds, _history_block the one a
        # save records (None after a restore: the state is in the history
        # already, and a save must not label it anew) and _parent the
        # block it ran on
        self.history = _history.History(folder, history_blocks, self.max_snapshot, _spills_of)
        self.current = None
        self._history_block = self._parent = None
        self._rewound_to = None
        # (block, parent) of blocks that changed nothing: their entry is the
        # snapshot on disk, linked when the session is idle (flush_history),
        # not in the save a warm block waits for
        self._history_pending = []
        # sys.path entries a block adds inside the workspace are saved
        self.workspace = os.path.realpath(workspace) if workspace else None
        self._base_path = frozenset(sys.path)
        self._path_memo = {}
        # name -> {block: record}: each top-level def/class of that name seen
        self._helpers = {}
        # name -> [import records]; star imports separately, in order
        self._imports = {}
        self._star = []
        self._cache = {}          # name -> _Entry
        self._status = {}         # name -> (saved, reason, size)
        self._last = None         # manifest of the snapshot on disk
        self._touched = None      # names the blocks since the last save used; None: all
        self._lost = {}
        self._counter_fd = None
        self._unsaved_fd = None
        self._helper_memo = {}    # name -> (value, its entries, record): saves a lookup per save
        self._version = 0         # counts changes to what the blocks defined and imported
        self._quick = None        # (names, ids, values, version, result, sys.path) of the last save
        self._preload_memo = {}   # top-level module -> whether a standby imports it ahead

    # ---- learning from blocks -------------------------------------------

    def after_block(self, namespace, source, block, names=None):
        """Learns what the block (source, compiled; names: its code_names, if
        known) defined, imported and used."""
        self.next_block = max(self.next_block, block + 1)
        if block != self._history_block:
            self._parent, self.current, self._history_block = self.current, block, block
        if (names is not None and not any(w in source for w in ("import", "def", "class"))
                and names.isdisjoint(self._helpers) and names.isdisjoint(self._imports)):
            # No statement can define or import anything without those
            # words, and none rebinds a helper or an import: no need to
            # parse it (the first block of a session does not wait for ast).
            if self._touched is not None:
                self._touched |= names
            return
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            self._touched = None
            return
        lines = source.splitlines()
        for st in _statements(tree.body):
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._learn_helper(st, lines, block)
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                self._learn_import(st, block)
            else:
                names = set()
                _bound(st, names)
                for n in names:
                    if n in self._helpers or n in self._imports:
                        self._helpers.pop(n, None)
                        self._imports.pop(n, None)
                        self._version += 1
        if self._touched is not None:
            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    self._touched.add(node.id)
                elif isinstance(node, ast.Attribute):
                    self._touched.add(node.attr)
                elif isinstance(node, ast.alias):
                    self._touched.add((node.asname or node.name).split(".")[0])

    def _learn_helper(self, node, lines, block):
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        text = textwrap.dedent("\n".join(lines[first - 1:node.end_lineno])) + "\n"
        doc = ast.get_docstring(node) or ""
        rec = {
            "name": node.name,
            "kind": "class" if isinstance(node, ast.ClassDef) else "function",
            "block": block,
            "line": first,
            "lines": node.end_lineno - first + 1,
            "doc": doc.strip().splitlines()[0] if doc.strip() else "",
            "source": text,
            "reads": global_reads(text),
        }
        # a new dict, never changed in place: helpers() trusts identity
        self._helpers[node.name] = {**self._helpers.get(node.name, {}), block: rec}
        self._imports.pop(node.name, None)
        self._version += 1

    def _learn_import(self, node, block):
        self._version += 1
        for name, text, root in _import_text(node):
            rec = {"stmt": text, "block": block, "line": node.lineno}
            if name is None:
                if text not in [r["stmt"] for r in self._star]:
                    self._star.append(rec)
                continue
            self._helpers.pop(name, None)
            old = self._imports.get(name)
            # `import a.b` then `import a.c` both bind a: keep both.
            if root is not None and old and all(r["stmt"] == f"import {root}" or r["stmt"].startswith(f"import {root}.")
                                                for r in old):
                if text not in [r["stmt"] for r in old]:
                    old.append(rec)
            else:
                self._imports[name] = [rec]

    def helper_record(self, name, value):
        """The record of the def/class that made value, or None when value is
        not (any longer) a helper defined by a block."""
        entries = self._helpers.get(name)
        if not entries:
            return None
        if isinstance(value, type):
            if value.__module__ != "__main__" or value.__qualname__ != name:
                return None
            for attr in vars(value).values():
                fn = getattr(attr, "__func__", getattr(attr, "fget", attr))
                b = _block_of(fn)
                if b is not None and getattr(fn, "__qualname__", "").startswith(name + "."):
                    return entries.get(b)
            return entries[max(entries)]
        inner = value
        for _ in range(100):
            nxt = getattr(inner, "__wrapped__", None)
            if nxt is None:
                break
            inner = nxt
        b = _block_of(inner)
        if b is not None:
            if getattr(inner, "__qualname__", None) != name:
                return None
            return entries.get(b)
        if callable(value) and not isinstance(value, types.FunctionType):
            return entries[max(entries)]
        return None

    def helpers(self, namespace):
        """{name: record} of the helpers in namespace, in definition order."""
        out = []
        memo, old = {}, self._helper_memo
        for name, entries in self._helpers.items():
            if name in self.protected or name not in namespace:
                continue
            v = namespace[name]
            m = old.get(name)
            if m is not None and m[0] is v and m[1] is entries:
                rec = m[2]
            else:
                try:
                    rec = self.helper_record(name, v)
                except Exception:  # a value's own __getattr__ may raise anything
                    rec = None
            memo[name] = (v, entries, rec)
            if rec is not None:
                out.append(rec)
        self._helper_memo = memo
        out.sort(key=lambda r: (r["block"], r["line"]))
        return {r["name"]: r for r in out}

    # ---- saving -----------------------------------------------------------

    def _closure(self, namespace, names):
        """names, plus every global that the session's functions and classes
        they name (and those those name...) read or write; None when that
        cannot be told (then every value is checked)."""
        todo = list(names)
        seen = set(names)
        try:
            while todo:
                found = set()
                _session_code(namespace.get(todo.pop()), namespace, found)
                for n in found - seen:
                    seen.add(n)
                    todo.append(n)
        except Exception:  # a value's own __getattr__ may raise anything
            return None
        return seen

    def _classify(self, namespace):
        imports, helpers, variables = [], [], []
        known = self.helpers(namespace)
        for name, v in namespace.items():
            if name in self.protected or (name.startswith("__") and name.endswith("__")):
                continue
            if name in known:
                continue
            if name in self._imports:
                imports.extend((name, r["stmt"]) for r in self._imports[name])
            elif isinstance(v, types.ModuleType) and sys.modules.get(getattr(v, "__name__", None)) is v:
                imports.append((name, f"import {v.__name__} as {name}"))
            else:
                variables.append(name)
        # a canonical order, so that a restored session compares equal
        imports.sort(key=lambda i: i[0])
        helpers = [r for n, r in known.items() if not (n.startswith("__") and n.endswith("__"))]
        imports = [(None, r["stmt"]) for r in self._star] + imports
        return imports, helpers, sorted(variables)

    def save(self, namespace, full=False, reasons=None):
        """Writes the snapshot when it changed. full=True checks every value
        again, for a last save before the process stops on purpose; reasons
        say why names are not saved, where the caller knows better."""
        touched = self._touched
        if full or touched is None or touched & _INDIRECT:
            touched = None
        else:
            touched = self._closure(namespace, touched)
            if touched is not None and touched & _INDIRECT:
                touched = None
        self._touched = set()
        # The quick way: the same names bound to the same objects, nothing
        # newly defined or imported, sys.path as it was, and every value the
        # blocks used cannot change in place: then nothing changed.
        keys, values = list(namespace), list(namespace.values())
        ids = list(map(id, values))
        q = self._quick
        if (touched is not None and q is not None and q[0] == keys and q[1] == ids and q[3] == self._version
                and q[5] == sys.path and all(self._cache[n].immutable for n in touched if n in self._cache)):
            self._write_counter()
            self._record_history()
            r = q[4]
            return {"changed": False, "saved": list(r["saved"]), "not_saved": dict(r["not_saved"]), "bytes": r["bytes"],
                    "names": r["names"], "preload": list(r["preload"])}
        imports, helpers, names = self._classify(namespace)
        paths = self._added_paths()

        entries = {}
        reach = set()
        later = []
        for name in names:
            v = namespace[name]
            e = self._cache.get(name)
            if e is not None and e.obj is v and (e.immutable or (touched is not None and name not in touched)):
                later.append((name, e))
                continue
            if e is not None and e.obj is v and e.probe is not None:
                # a frame a block only read: its probe, not its pickle
                probe = _probe(v, e.pins)
                if probe is not None and probe[0] == e.probe:
                    e.pins = probe[1]
                    later.append((name, e))
                    continue
            entries[name] = ne = self._entry(v, e)
            reach |= ne.reach
        for name, e in later:
            if reach and e.reach and not reach.isdisjoint(e.reach):
                e = self._entry(e.obj, e)
            entries[name] = e

        used = spilled = 0
        saved, spills, not_saved, status = [], [], {}, {}
        spill_dir = os.path.join(self.folder, SPILL_DIR)
        by_object = {}  # id -> the spill row of a value two names are bound to
        for name in names:
            e = entries[name]
            if e.data is not None and used + len(e.data) <= VALUES_BUDGET:
                used += len(e.data)
                saved.append((name, e.data))
                status[name] = (True, None, len(e.data))
                continue
            if e.reason is not None or e.too_big:
                reason = e.reason or over_value(self.max_value)
                not_saved[name] = reason
                status[name] = (False, reason, _size_of(e.obj))
                continue
            kind = e.kind()
            if (kind == "pickle" and e.file is not None and e.parts is None and e.data is None
                    and not os.path.exists(os.path.join(spill_dir, e.file))):
                # its file is gone (removed by hand): pickled again for a new one
                entries[name] = e = self._entry(e.obj, None)
            same = by_object.get(id(e.obj)) if kind == "pickle" else None
            if same is not None:
                spills.append((name, *same[1:]))
                status[name] = (True, None, same[3])
                continue
            size = e.spill_size()
            if size > self.max_value:
                reason = over_value(self.max_value)
            elif used + spilled + size > self.max_snapshot:
                reason = over_budget(self.max_snapshot)
            else:
                spilled += size
                if kind != "pickle":
                    row = (name, e.spill_digest(), kind, size, ())
                else:
                    if e.file is None:
                        e.file = "p-" + os.urandom(12).hex()
                    row = (name, e.file, kind, size, e.fingerprint())
                    by_object[id(e.obj)] = row
                spills.append(row)
                status[name] = (True, None, size)
                continue
            not_saved[name] = reason
            status[name] = (False, reason, size)
        for name, reason in (reasons or {}).items():
            if name in not_saved:
                not_saved[name] = reason
                status[name] = (False, reason, status[name][2])
        self._cache = entries
        self._status = status

        # records are never changed in place: comparing them is mostly identity
        # names lost in a restart and not bound since: a later restart still
        # knows why they are missing
        lost_before = tuple(sorted((n, r) for n, r in self._lost.items() if n not in namespace))
        manifest = (tuple(imports), tuple(helpers), tuple(saved), tuple(spills), tuple(sorted(not_saved.items())),
                    lost_before, paths)
        # "names": how many names the snapshot brings back (helpers, classes,
        # imports and variables), what `sandbox list` shows
        result = {"changed": False, "saved": [n for n, _ in saved] + [s[0] for s in spills],
                  "not_saved": not_saved, "bytes": used + spilled,
                  "names": len(helpers) + len({n for n, _ in imports if n is not None}) + len(saved) + len(spills),
                  "preload": self._preload(namespace, imports, names)}
        # (values kept so that the ids stay theirs)
        self._quick = (keys, ids, values, self._version, result, list(sys.path))
        try:
            if manifest == self._last:
                self._write_counter()
                self._record_history()
                return dict(result)
            try:
                # the blocks waiting for their link name the file this write replaces
                self.flush_history()
                self._write(manifest, helpers, entries)
            except OSError as e:
                # the old snapshot stays; the next save tries again
                result["error"] = f"the snapshot could not be written: {e}"
                self._quick = None
                return result
        finally:
            for e in entries.values():
                e.written()  # nothing pins a value's buffers between blocks
        self._last = manifest
        self._write_counter()
        self._record_history(sweep=True)
        result["changed"] = True
        return result

    def _record_history(self, sweep=False):
        """Records the snapshot on disk as the state after the block this
        process ran last: at once after a write (sweep: then deletes the
        spill files neither it nor the history names, after the history
        entries that named them, so that a kill in between leaves only
        files no one reads), else when the session is idle."""
        block = self._history_block
        if block is None:
            pass
        elif sweep:
            self.history.record(block, self._parent or 0, os.path.join(self.folder, SNAPSHOT))
        elif not self._history_pending or self._history_pending[-1][0] != block:
            self._history_pending.append((block, self._parent or 0))
        if sweep and self._last is not None:
            self._sweep({s[1] for s in self._last[3]})

    def flush_history(self):
        """Links the snapshot on disk for the blocks that wait for it. A
        kill first loses those entries only (their state is the one of the
        last entry linked before them)."""
        pending, self._history_pending = self._history_pending, []
        dropped = False
        for block, parent in pending:
            self.history.record(block, parent, os.path.join(self.folder, SNAPSHOT))
            dropped = dropped or bool(self.history.dropped)
        if dropped and self._last is not None:
            self._sweep({s[1] for s in self._last[3]})

    def _sweep(self, keep):
        spill_dir = os.path.join(self.folder, SPILL_DIR)
        keep = keep | self.history.spill_files()
        try:
            old = os.listdir(spill_dir)
        except OSError:
            old = []
        for n in old:
            if n not in keep and ".tmp-" not in n:
                _unlink(os.path.join(spill_dir, n))

    def flush_history_when_quiet(self, fd, quiet):
        """flush_history once the link fd has been quiet for quiet seconds
        (a request first: later)."""
        if self._history_pending:
            import select
            if not select.select([fd], [], [], quiet)[0]:
                self.flush_history()

    def history_blocks(self):
        """The blocks a rewind can go to, oldest first."""
        self.flush_history()
        return self.history.blocks()

    def rewind(self, block):
        """Makes the snapshot after block (from the history) the one the
        restore reads; raises ValueError saying why it cannot. Returns what
        the notice says of it: the blocks it goes back past and the files
        they were seen to write."""
        path = os.path.join(self.folder, SNAPSHOT)
        rewound = self.history.rewound(block, path)
        self.history.restore(block, path)
        self._rewound_to = block
        # what the last process did not save is not what comes back
        _unlink(os.path.join(self.folder, UNSAVED))
        return {"rewound_blocks": rewound, "rewound_files": self.history.files_of(rewound)}

    def _preload(self, namespace, imports, names):
        """The third-party top-level modules (standby.worth_preloading) that
        the snapshot's imports and its values' types come from: what a
        warm standby imports ahead of a restart."""
        roots = set()
        for name, _ in imports:
            v = namespace.get(name) if name is not None else None
            if isinstance(v, types.ModuleType):
                roots.add(getattr(v, "__name__", "") or "")
            elif isinstance(v, (type, types.FunctionType, types.BuiltinFunctionType)):
                roots.add(getattr(v, "__module__", "") or "")
        for name in names:
            roots.add(getattr(type(namespace[name]), "__module__", "") or "")
        memo = self._preload_memo
        return sorted(r for r in {r.partition(".")[0] for r in roots if isinstance(r, str)}
                      if r and _standby.worth_preloading(r, self.workspace, memo))

    def _entry(self, value, old):
        """A new _Entry for value (old: the last one of its name, or None).
        A spilled value whose parts are those of old's file keeps that file."""
        if type(value) in (str, bytes) and len(value) > VALUE_LIMIT:
            return _Entry(value, immutable=True)
        e = _pickle(value, self.max_value)
        if e.parts is not None and _probe_worthy(value):
            probe = _probe(value, None)
            if probe is not None:
                e.probe, e.pins = probe
        if (e.parts is not None and old is not None and old.file is not None and old.fp is not None
                and e.fingerprint() == old.fp):
            e.file = old.file
            e.parts = None
        return e

    def _added_paths(self):
        """The sys.path entries blocks added that lie in the workspace, in
        order, each with whether it comes before the interpreter's own."""
        if self.workspace is None:
            return ()
        out, front = [], True
        for p in sys.path:
            if p in self._base_path:
                front = False
                continue
            inside = self._path_memo.get(p)
            if inside is None:
                try:
                    real = os.path.realpath(os.path.join(self.workspace, os.fsdecode(p)))
                    inside = real == self.workspace or real.startswith(self.workspace.rstrip(os.sep) + os.sep)
                except (TypeError, ValueError):
                    inside = False
                self._path_memo[p] = inside
            if inside and isinstance(p, str):
                out.append((p, front))
        return tuple(out)

    def _write_counter(self):
        try:
            if self._counter_fd is None:
                os.makedirs(self.folder, exist_ok=True)
                self._counter_fd = os.open(os.path.join(self.folder, COUNTER),
                                           os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            os.pwrite(self._counter_fd, b"%020d\n" % self.next_block, 0)
        except OSError:
            pass

    def mark_unsaved(self, blocks):
        """Records that the changes of blocks ([(block, names)]) are not
        saved yet (the process's own file: written in place, never synced,
        since only a kill of the process, not of the machine, is what it
        names)."""
        names = sorted({n for _, ns in blocks for n in ns})
        data = wire.dumps({"block": blocks[0][0], "last": blocks[-1][0], "names": names[:50]}, ascii=True).encode()
        data = data[:UNSAVED_MAX]
        try:
            if self._unsaved_fd is None:
                os.makedirs(self.folder, exist_ok=True)
                self._unsaved_fd = os.open(os.path.join(self.folder, UNSAVED),
                                           os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            os.pwrite(self._unsaved_fd, data, 0)
            os.ftruncate(self._unsaved_fd, len(data))
        except OSError:
            pass

    def mark_saved(self):
        if self._unsaved_fd is not None:
            try:
                os.ftruncate(self._unsaved_fd, 0)
            except OSError:
                pass

    def _read_unsaved(self, saved_next):
        """What the last process's unsaved marker names ({"block", "names"})
        when the snapshot (saved_next: its next block, 0 for none) is older
        than that block; None otherwise. The file is the session's to
        write: read bounded, regular files only, without waiting."""
        data = _history.read_bounded(os.path.join(self.folder, UNSAVED), UNSAVED_MAX)
        try:
            marker = wire.loads(data) if data and data.strip() else None
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(marker, dict) or type(marker.get("block")) is not int or not isinstance(marker.get("names"), list):
            return None
        if saved_next > marker["block"]:
            return None  # the save finished; only the marker's clearing did not
        last = marker.get("last") if type(marker.get("last")) is int else marker["block"]
        return {"block": marker["block"], "last": max(last, marker["block"]),
                "names": [n for n in marker["names"] if isinstance(n, str)][:50]}

    def _write(self, manifest, helpers, entries):
        imports, _, saved, spills, not_saved, lost_before, paths = manifest
        os.makedirs(self.folder, exist_ok=True)
        spill_dir = os.path.join(self.folder, SPILL_DIR)
        if spills:
            os.makedirs(spill_dir, exist_ok=True)
            wrote = False
            for name, file, _, _, _ in spills:
                path = os.path.join(spill_dir, file)
                if not os.path.exists(path):
                    _write_atomic(path, entries[name].spill_chunks())
                    wrote = True
                entries[name].written()  # the encoded copy is not kept in memory
            if wrote:
                _fsync_dir(spill_dir)
        var_rows, offset = [], 0
        for name, data in saved:
            var_rows.append({"name": name, "type": _defs.type_name(entries[name].obj), "offset": offset,
                             "length": len(data), "crc": zlib.crc32(data)})
            offset += len(data)
        header = {
            "format": FORMAT,
            "python": sys.version.split()[0],
            "next_block": self.next_block,
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
        path = os.path.join(self.folder, SNAPSHOT)
        # A new session's first snapshot replaces none: its block need not
        # wait for the disk.
        _write_atomic(path, chunks, sync=os.path.exists(path))
        _remove_temps(self.folder, SNAPSHOT)

    # ---- restoring --------------------------------------------------------

    def _read(self):
        with open(os.path.join(self.folder, SNAPSHOT), "rb") as f:
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

    def _read_counter(self):
        # A block may have replaced it with a FIFO or a link to a device:
        # that reads as no counter, without waiting.
        try:
            return int((_history.read_bounded(os.path.join(self.folder, COUNTER), 64) or b"0").strip() or b"0")
        except ValueError:
            return 0

    def restore(self, namespace, drop=()):
        """Brings the snapshot back into namespace, but for the names in drop
        (left out on request: the next save leaves them out too). Never
        raises: whatever the restored code raises is in the report."""
        try:
            return self._restore(namespace, frozenset(drop))
        except BaseException as e:  # a bug here, or a SystemExit it missed, must not cost the session
            return {"imports": [], "functions": [], "classes": [], "variables": [], "paths": [],
                    "lost": {}, "uses_lost": {},
                    "error": f"an internal error stopped it: {type(e).__name__}: {e}"}

    def discard(self, reason):
        """Deletes the snapshot and its spill files instead of restoring
        them: the session starts empty. The report names what the snapshot
        held (when its header can be read) and why it is gone."""
        self.next_block = max(self.next_block, self._read_counter())
        path = os.path.join(self.folder, SNAPSHOT)
        report = {"imports": [], "functions": [], "classes": [], "variables": [], "paths": [], "lost": {},
                  "uses_lost": {}, "discarded": reason, "held": []}
        if not os.path.exists(path):
            return report
        try:
            header, _ = self._read()
            self.next_block = max(self.next_block, int(header.get("next_block", 1)))
            held = [i["name"] for i in header.get("imports", []) if i.get("name")]
            for key in ("helpers", "variables", "spills"):
                held.extend(r["name"] for r in header.get(key, []))
            report["held"] = sorted(set(held) - self.protected)
        except Exception as e:
            report["unreadable"] = str(e)
        self._lost = {n: f"the snapshot was discarded: {reason}" for n in report["held"]}
        _unlink(path)
        self._history_block = self.current = None
        # the history stays: a rewind can still go back past the discard
        self._sweep(set())
        return report

    def _restore(self, namespace, drop):
        _remove_temps(self.folder, SNAPSHOT)
        _remove_temps(os.path.join(self.folder, SPILL_DIR))
        self.next_block = max(self.next_block, self._read_counter())
        if not os.path.exists(os.path.join(self.folder, SNAPSHOT)):
            unsaved = self._read_unsaved(0)
            return {"unsaved": unsaved, "no_snapshot": True} if unsaved else {}
        report = {"imports": [], "functions": [], "classes": [], "variables": [], "paths": [], "lost": {},
                  "uses_lost": {}}
        try:
            header, blob = self._read()
        except Exception as e:
            report["error"] = f"the snapshot could not be read: {e}"
            return report
        self.next_block = max(self.next_block, int(header.get("next_block", 1)))
        unsaved = self._read_unsaved(int(header.get("next_block", 1)))
        if unsaved:
            report["unsaved"] = unsaved
        skip = self.protected | drop
        dropped = set()

        def wanted(name):
            if name in drop:
                dropped.add(name)
            return name not in skip

        # sys.path first: the imports may need the folders a block added
        rows = [r for r in header.get("sys_path", []) if isinstance(r.get("path"), str)]
        for r in reversed([r for r in rows if r.get("front")]):
            if r["path"] not in sys.path:
                sys.path.insert(0, r["path"])
        for r in rows:
            if not r.get("front") and r["path"] not in sys.path:
                sys.path.append(r["path"])
        report["paths"] = [r["path"] for r in rows]
        # Spill files of str and bytes are read on a thread while imports
        # run and values are unpickled (a file read lets other Python code
        # run); pickles are mapped, which takes no time.
        spill_rows = [r for r in header.get("spills", []) if wanted(r["name"])]
        raw_rows = [r for r in spill_rows if r["type"] in ("str", "bytes")]
        spilled = {}

        def read_spills():
            for row in raw_rows:
                try:
                    with open(os.path.join(self.folder, SPILL_DIR, row["file"]), "rb") as f:
                        spilled[row["file"]] = f.read()
                except OSError as e:
                    spilled[row["file"]] = e

        if raw_rows:
            import threading
            reader = threading.Thread(target=read_spills, name="vis-restore-spills", daemon=True)
            reader.start()
        lost = report["lost"]
        lost.update(header.get("not_saved", {}))
        interrupted = False

        def run(code, filename):
            nonlocal interrupted
            if interrupted:
                return "restoring was interrupted"
            try:
                exec(compile(code, filename, "exec"), namespace)
            except KeyboardInterrupt:
                interrupted = True
                return "restoring was interrupted"
            except (Exception, SystemExit) as e:
                return f"could not be restored: {type(e).__name__}: {e}"
            return None

        # imports
        for imp in header.get("imports", []):
            name, stmt = imp["name"], imp["stmt"]
            if name is not None and not wanted(name):
                continue
            err = run(stmt, "<restore>")
            if name is None:
                if err is None:
                    self._star.append({"stmt": stmt, "block": 0, "line": 0})
                continue
            if err is None:
                if name not in report["imports"]:
                    report["imports"].append(name)
                self._imports.setdefault(name, []).append({"stmt": stmt, "block": 0, "line": 0})
                lost.pop(name, None)
            elif name not in report["imports"]:
                lost[name] = err

        # helpers: registered in linecache under their block's name, then run;
        # one that needs a variable first is tried again after the variables.
        helpers = [h for h in header.get("helpers", []) if wanted(h["name"])]
        by_block = {}
        for h in helpers:
            by_block.setdefault(h["block"], []).append(h)
        for block, hs in by_block.items():
            fn = f"<block {block}>"
            lines = []
            for h in hs:
                src = h["source"].splitlines(True)
                end = h["line"] - 1 + len(src)
                lines.extend(["\n"] * (end - len(lines)))
                lines[h["line"] - 1:end] = src
            old = linecache.cache.get(fn)
            if old and len(old) == 4 and old[2]:
                keep = list(old[2])
                keep.extend(["\n"] * (len(lines) - len(keep)))
                for i, ln in enumerate(lines):
                    if ln.strip():
                        keep[i] = ln
                lines = keep
            linecache.cache[fn] = (sum(map(len, lines)), None, lines, fn)

        def define(h):
            err = run("\n" * (h["line"] - 1) + h["source"], f"<block {h['block']}>")
            if err is None:
                self._helpers[h["name"]] = {**self._helpers.get(h["name"], {}), h["block"]: h}
                lost.pop(h["name"], None)
            return err

        pending = []
        for h in helpers:
            err = define(h)
            if err is not None:
                pending.append((h, err))

        def unpickled(load):
            """Runs load(), which binds a value: None, or why it failed."""
            if interrupted:
                return "restoring was interrupted"
            try:
                load()
            except KeyboardInterrupt:
                return "restoring was interrupted"
            except (Exception, SystemExit) as e:  # any __setstate__ may raise anything
                return f"could not be restored: {type(e).__name__}: {e}"
            return None

        # variables (in snapshot.bin, then spilled pickles), then spills of str and bytes
        def load(row):
            name = row["name"]
            data = blob[row["offset"]:row["offset"] + row["length"]]
            if zlib.crc32(data) != row["crc"]:
                return "could not be restored: its data in the snapshot is damaged"

            def bind():
                namespace[name] = _loads(data)
                self._cache[name] = _Entry(namespace[name], data=bytes(data))
            return unpickled(bind)

        def load_spilled(row):
            path = os.path.join(self.folder, SPILL_DIR, row["file"])
            try:
                view = _map(path, row["size"])
            except FileNotFoundError:
                return f"could not be restored: its file {SPILL_DIR}/{row['file']} is missing"
            except (OSError, ValueError) as e:
                return f"could not be restored: {e}"
            sizes = [n for n, _ in row["parts"]]
            offsets, _ = _layout(sizes)
            parts = [view[o:o + n] for o, n in zip(offsets, sizes, strict=True)]
            if zlib.crc32(parts[0]) != row["parts"][0][1]:
                return f"could not be restored: its file {SPILL_DIR}/{row['file']} is damaged"

            def bind():
                value = _loads(parts[0], parts[1:])
                namespace[row["name"]] = value
                e = _Entry(value)
                e.file, e.fp, e.size = row["file"], tuple(map(tuple, row["parts"])), row["size"]
                self._cache[row["name"]] = e
            return unpickled(bind)

        failed_vars = []
        values = [(r, load) for r in header.get("variables", []) if wanted(r["name"])]
        values += [(r, load_spilled) for r in spill_rows if r["type"] == "pickle"]
        for row, how in values:
            err = how(row)
            if err is None:
                report["variables"].append(row["name"])
            else:
                failed_vars.append((row, how))
        if raw_rows:
            reader.join()
        for row in raw_rows:
            name = row["name"]
            try:
                raw = spilled[row["file"]]
                if isinstance(raw, OSError):
                    raise raw
                if len(raw) != row["size"]:
                    raise ValueError(f"its spill file has {len(raw)} bytes, not {row['size']}")
                value = raw.decode("utf-8", "surrogatepass") if row["type"] == "str" else raw
            except FileNotFoundError:
                lost[name] = f"could not be restored: its file {SPILL_DIR}/{row['file']} is missing"
                continue
            except (OSError, ValueError) as e:
                lost[name] = f"could not be restored: {e}"
                continue
            namespace[name] = value
            e = _Entry(value, immutable=True)
            e.digest, e.size = row["file"], row["size"]
            self._cache[name] = e
            report["variables"].append(name)

        # second chance for what needed something defined later
        for h, _ in pending:
            err = define(h)
            if err is not None:
                lost[h["name"]] = err
        for row, how in failed_vars:
            err = how(row)
            if err is None:
                report["variables"].append(row["name"])
            else:
                lost[row["name"]] = err

        report["variables"].sort()
        for h in helpers:
            if h["name"] not in lost:
                report["functions" if h["kind"] == "function" else "classes"].append(h["name"])
        why_dropped = "left out on request when the session restarted"
        self._lost = {**header.get("lost_before", {}), **lost, **{n: why_dropped for n in dropped}}
        if drop:
            report["dropped"] = sorted(dropped)
            report["not_found"] = sorted(drop - dropped)
        report["uses_lost"] = uses_lost({h["name"]: h.get("reads", []) for h in helpers if h["name"] not in lost},
                                        set(lost) | dropped)
        self._touched = set()
        # What came back is what the snapshot holds: the next save rewrites it
        # only when something differs (the lost names drop out of it).
        manifest = self._manifest_of(namespace)
        self._last = None if lost or dropped or interrupted else manifest
        self._history_block = None
        self.current = self._rewound_to or self.history.current(os.path.join(self.folder, SNAPSHOT))
        return report

    def _manifest_of(self, namespace):
        imports, helpers, names = self._classify(namespace)
        saved, spills = [], []
        for name in names:
            e = self._cache.get(name)
            if e is None or e.obj is not namespace[name]:
                return None
            if e.data is not None:
                saved.append((name, e.data))
            elif e.fp is not None:
                spills.append((name, e.file, "pickle", e.size, e.fp))
            else:
                spills.append((name, e.digest, e.kind(), e.spill_size(), ()))
        self._status = {n: (True, None, len(d)) for n, d in saved}
        self._status.update({s[0]: (True, None, s[3]) for s in spills})
        return (tuple(imports), tuple(helpers), tuple(saved), tuple(spills), (), (), self._added_paths())

    def lost_reason(self, name):
        """Why name did not come back in the last restore, or None."""
        return self._lost.get(name)

    # ---- describing -------------------------------------------------------

    def variable_status(self, name, value):
        """(saved, reason, size) of a variable as the last save found it."""
        st = self._status.get(name)
        if st is not None:
            e = self._cache.get(name)
            if e is not None and e.obj is value:
                return st
        return (False, "not saved yet: it changed after the last save", _size_of(value))

    def variables(self, namespace):
        """Names of the namespace's variables (neither helpers nor imports), sorted."""
        return self._classify(namespace)[2]

    def describe(self, namespace):
        """JSON-able data about the session's helpers and variables."""
        helpers = []
        for name, rec in self.helpers(namespace).items():
            helpers.append({"name": name, "kind": rec["kind"],
                            "signature": _defs.signature(name, namespace[name], rec["kind"]),
                            "block": rec["block"], "lines": rec["lines"], "doc": rec["doc"]})
        variables = []
        for name in self.variables(namespace):
            v = namespace[name]
            saved, reason, size = self.variable_status(name, v)
            variables.append({"name": name, "type": _defs.type_name(v), "size": size, "saved": saved, "reason": reason})
        return {"helpers": helpers, "variables": variables}


def uses_lost(reads, lost):
    """{helper: sorted lost names it reads, directly or through other helpers}."""
    result = {h: set(r) & lost for h, r in reads.items()}
    changed = True
    while changed:
        changed = False
        for h, r in reads.items():
            for g in r:
                if g in result and g != h and not result[g] <= result[h]:
                    result[h] |= result[g]
                    changed = True
    return {h: sorted(v) for h, v in result.items() if v}


def _names(names, limit=12):
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", +{len(names) - limit} more"


# How much of what restoring printed the notice shows.
OUTPUT_LINES = 6
OUTPUT_WIDTH = 200


def output_lines(text, more=0):
    """The first OUTPUT_LINES lines of text, each cut to OUTPUT_WIDTH
    characters, then how many more there were (more: lines past text)."""
    rows = text.rstrip("\n").splitlines()
    out = [r if len(r) <= OUTPUT_WIDTH else r[:OUTPUT_WIDTH - 1] + "…" for r in rows[:OUTPUT_LINES]]
    more += max(len(rows) - OUTPUT_LINES, 0)
    if more:
        out.append(f"… +{more} more lines")
    return out


def notice(reason, report, output="", more_lines=0, rewound=False):
    """The "[Sandbox restarted]" text the next block's output starts with
    ("[Sandbox rewound]" after a rewind); output is what restoring printed
    (stdout and stderr, warnings too), more_lines how many lines after it
    were not kept."""
    why = (reason or "the previous sandbox process stopped").strip().rstrip(".")
    lines = [f"[Sandbox {'rewound' if rewound else 'restarted'}] {why[:1].upper()}{why[1:]}."]
    if (report or {}).get("rewind_error"):
        lines.append(f"{report['rewind_error'].rstrip('.')}; the session's last snapshot comes back instead.")
    unsaved = (report or {}).get("unsaved")
    if unsaved:
        what = f" to {_names(unsaved['names'])}" if unsaved["names"] else ""
        first, last = unsaved["block"], unsaved.get("last", unsaved["block"])
        which = f"block {first}" if last == first else f"blocks {first} to {last}"
        lines.append(f"The changes of {which}{what} were not saved: the process stopped after the "
                     "block answered and before its snapshot was written.")
    if output.strip():
        lines.append("Restoring printed:")
        lines.extend("  " + r for r in output_lines(output, more_lines))
    if not report or report.get("no_snapshot"):
        lines.append("There was no snapshot to restore.")
        return "\n".join(lines)
    if report.get("discarded"):
        gone = report["discarded"].strip().rstrip(".")
        lines.append(f"The snapshot was discarded: {gone}; the session starts empty.")
        if report.get("held"):
            lines.append(f"It held ({len(report['held'])}): {_names(report['held'])}.")
        elif report.get("unreadable"):
            lines.append(f"It could not be read: {report['unreadable']}.")
        return "\n".join(lines)
    if report.get("error"):
        lines.append(f"Restoring failed: {report['error']}; the session starts without it.")
    kinds = [("functions", "helpers"), ("classes", "classes"), ("variables", "variables"), ("imports", "imports"),
             ("paths", "sys.path entries")]
    came = [f"{label} ({len(report[k])}): {_names(report[k])}" for k, label in kinds if report.get(k)]
    if came:
        lines.append("Restored " + "; ".join(came) + ".")
    elif not report.get("error"):
        lines.append("The snapshot was empty.")
    if report.get("dropped"):
        lines.append(f"Left out on request ({len(report['dropped'])}): {_names(report['dropped'])}.")
    if report.get("not_found"):
        lines.append(f"Not in the snapshot, so nothing to leave out: {_names(report['not_found'])}.")
    lost = report.get("lost") or {}
    if lost:
        items = sorted(lost.items())
        lines.append(f"Did not come back ({len(items)}):")
        for name, why in items[:12]:
            lines.append(f"  {name}: {why}")
        if len(items) > 12:
            lines.append(f"  +{len(items) - 12} more")
    ul = report.get("uses_lost") or {}
    if ul:
        rows = [f"{h} ({', '.join(v)})" for h, v in sorted(ul.items())]
        lines.append("Restored helpers that use a name that did not come back: " + _names(rows) + ".")
    if rewound:
        files = (report or {}).get("rewound_files") or []
        wrote = ""
        if files:
            blocks = report.get("rewound_blocks") or []
            which = f"block {blocks[0]}" if len(blocks) == 1 else "the blocks rewound"
            wrote = f"; {which} wrote {_names(files)}"
        lines.append(f"Files are not rewound{wrote}: they stay as they are (a workspace under git is yours "
                     "to restore).")
    return "\n".join(lines)
