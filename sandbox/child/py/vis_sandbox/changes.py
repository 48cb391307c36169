"""What a block changed: the save's record of each value, and what tells that
it did not change without pickling it again.

A value is pickled again only when its name is bound to another object, or
the block (or a session function or class it names, transitively) names it,
or it holds a mutable object that a re-pickled value holds too (aliases,
found through the garbage collector's references, one C call per level of
nesting). A spilled value pickled again is compared with its file by the
lengths and CRC-32s of its parts (pickling hands over an array's buffers
without copying them; the CRC reads them once, about 3 GB/s): its file is
written again only when they differ. A pandas object or numpy object array
a block only read is probed (probe) rather than pickled. A change made only
through objects outside the session (another module, a thread, a numpy view
of an array kept under another name that no block names) is seen by the next
save with full=True.
"""

import builtins
import gc
import marshal
import sys
import types
import zlib

from vis_sandbox import defs as _defs
from vis_sandbox.lazy import module as _lazy
from vis_sandbox.snapfile import MARSHAL_TAG, MARSHALLED, OOB_MIN, PROTOCOL, VALUE_LIMIT, layout

ast = _lazy("ast", globals())
hashlib = _lazy("hashlib", globals())
# The C pickler itself (see snapfile)
pickle = _lazy("_pickle", globals(), "pickle")
symtable = _lazy("symtable", globals())

# Types whose values never change in place: a name still bound to the same
# object of one of these (with only such objects inside) needs no new pickle.
_IMMUTABLE = frozenset({type(None), bool, int, float, complex, str, bytes, tuple,
                        frozenset, range, type(Ellipsis)})
# Names through which a block can reach any global without naming it: when a
# block (or a helper it calls) uses one, every saved value is checked again.
INDIRECT = frozenset({"globals", "vars", "locals", "exec", "eval", "modules",
                       "__main__", "__dict__", "__import__", "setattr", "delattr"})


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


class Entry:
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
        # probe's fingerprint of the value as pickled, and its pins
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
                self.size = layout([n for n, _ in self.fingerprint()])[1]
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
        offsets, _ = layout([n for n, _ in self.fingerprint()])
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
                if of_main(obj):
                    raise _Unprobed  # a rewind in place must not reuse it (inplace.py)
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


def of_main(obj):
    """Whether obj is a class or function a block defined, or an instance
    of one: a restore defines those anew, so a value holding one is not
    the value a restore would give if it were kept as it is."""
    if isinstance(obj, (type, types.FunctionType)) and obj.__module__ == "__main__":
        return True
    return type(obj).__module__ == "__main__"


class _OfMain(Exception):
    pass


def _checker_class():
    """_Checker, made at its first use (see _prober_class)."""
    global _Checker
    if _Checker is None:

        class Checker(pickle.Pickler):
            """Pickles as pickled() does for snapshot.bin, refusing what
            of_main says a restore makes anew (the C pickler asks
            reducer_override about every object but atomic values and
            exact builtin containers, whose items it asks about)."""

            def reducer_override(self, obj):
                if of_main(obj):
                    raise _OfMain
                return NotImplemented

        _Checker = Checker
    return _Checker


_Checker = None


def pickles_again(value, data):
    """The mutable objects value holds (as Entry.reach) when it pickles
    to data (its pickle in snapshot.bin) again and holds nothing of_main
    says a restore makes anew; None otherwise (a longer pickle stops at
    data's length)."""
    w = _LimitedWriter(len(data))
    try:
        _checker_class()(w, PROTOCOL).dump(value)
    except Exception:  # _TooBig, _OfMain, or anything a __reduce__ raises
        return None
    return reach(value) if b"".join(w.parts) == data else None


def probe_worthy(value):
    """Whether a spilled value is probed (probe): pandas objects and numpy
    object arrays, whose text a pickle copies element by element."""
    t = type(value)
    root = (getattr(t, "__module__", "") or "").partition(".")[0]
    if root == "pandas":
        return True
    return root == "numpy" and getattr(getattr(value, "dtype", None), "hasobject", False)


def probe(value, pins):
    """(fingerprint, pins) of value (see _Prober), or None when it cannot
    be probed; pins are those of the last probe of the same value."""
    w = _CrcWriter()
    p = _prober_class()(w, pins or {})
    try:
        p.dump(value)
    except Exception:  # _Unprobed, or anything a __reduce__ raises
        return None
    return (w.n, w.crc, tuple(p.crcs)), p.pins


def pickled(value, limit):
    """An Entry for value: its pickle (or marshal, see MARSHALLED) in
    snapshot.bin when it fits VALUE_LIMIT with its buffers in band, else
    its stream and out-of-band buffers for a spill file; or why there is
    none (too_big: over limit bytes)."""
    if type(value) in MARSHALLED:
        return _marshalled(value, limit)
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
    except Exception as e:  # any __reduce__ may raise anything
        reason = _unpicklable(value, e)
    if reason is not None:
        return Entry(value, reason=reason)
    held = reach(value)
    immutable = type(value) in _IMMUTABLE and not held
    if too_big:
        buffers.clear()
        return Entry(value, too_big=True, reach=held, immutable=immutable)
    if buffers and w.size + w.oob <= VALUE_LIMIT:
        # small enough for snapshot.bin: pickled again, its buffers in band
        inband = _LimitedWriter(VALUE_LIMIT)
        try:
            pickle.Pickler(inband, PROTOCOL).dump(value)
            buffers, w = [], inband
        except _TooBig:
            pass  # the opcodes around the buffers tipped it over: spilled
    if not buffers and w.size <= VALUE_LIMIT:
        return Entry(value, data=b"".join(w.parts), reach=held, immutable=immutable)
    return Entry(value, parts=[w.parts, *buffers], reach=held, immutable=immutable)


def _marshalled(value, limit):
    """An Entry for a value of a type in MARSHALLED (see pickled)."""
    data = MARSHAL_TAG + marshal.dumps(value)
    if len(data) <= VALUE_LIMIT:
        return Entry(value, data=data, immutable=True)
    if len(data) > limit:
        return Entry(value, too_big=True, immutable=True)
    return Entry(value, parts=[[data]], immutable=True)


def _unpicklable(value, e):
    """Why value cannot be pickled, pickling it having raised e."""
    if isinstance(e, RecursionError):
        return f"{_defs.type_name(value)} cannot be pickled: it is nested too deeply"
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    qual = getattr(value, "__qualname__", "")
    if isinstance(value, types.FunctionType) and ("<lambda>" in qual or "<locals>" in qual):
        msg = "it is a lambda or a nested function; define it with def at the top of a block to keep it"
    return f"{_defs.type_name(value)} cannot be pickled: {msg}"


# Objects a value may hold that are not its data: a change to them is not a
# change to the value's pickle (functions and classes pickle by name).
_NOT_DATA = _IMMUTABLE - {tuple, frozenset} | {
    type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
    types.CodeType, types.FrameType, types.GeneratorType, types.CoroutineType}
_THROUGH = frozenset({tuple, frozenset})  # never changed, but may hold what is
_REACH_CAP = 1 << 20


def reach(value):
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


def session_code(value, namespace, found):
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


def statements(body):
    """Every statement that runs at module level: the block's own and those
    inside its if/for/while/try/with/match bodies, in order."""
    for st in body:
        yield st
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(st, field, None)
            if isinstance(sub, list):
                yield from statements(sub)
        for h in getattr(st, "handlers", ()):
            yield from statements(h.body)
        for case in getattr(st, "cases", ()):
            yield from statements(case.body)


def bound(node, out):
    """Names a statement binds or deletes itself (nested statements, lambdas
    and comprehension variables left out)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.stmt, ast.Lambda)):
            continue
        if isinstance(child, ast.comprehension):
            for sub in [child.iter, *child.ifs]:
                bound(sub, out)
            continue
        if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
            out.add(child.id)
        elif isinstance(child, ast.ExceptHandler) and child.name:
            out.add(child.name)
        elif type(child).__name__ in ("MatchAs", "MatchStar") and getattr(child, "name", None):
            out.add(child.name)
        elif type(child).__name__ == "MatchMapping" and child.rest:
            out.add(child.rest)
        bound(child, out)


def import_text(node):
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


def block_of(code_or_func):
    code = getattr(code_or_func, "__code__", code_or_func)
    fn = getattr(code, "co_filename", "")
    if fn.startswith("<block ") and fn.endswith(">"):
        try:
            return int(fn[7:-1])
        except ValueError:
            return None
    return None


def size_of(value):
    """sys.getsizeof, which runs the value's own __sizeof__ (pandas computes
    its memory use there), or 0 when that raises."""
    try:
        return sys.getsizeof(value)
    except Exception:
        return 0

