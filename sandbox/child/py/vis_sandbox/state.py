"""Saves a sandbox session after each block and brings it back in a new interpreter.

The snapshot holds the session's imports, the source of its helper functions and
classes, the sys.path entries its blocks added inside the workspace, its picklable
variables, and large values in spill files. It is written atomically and only when
it changed; restore runs it statement by statement and reports what came back and
what did not, and why.

State is the session's record of all that: what the blocks defined, imported
and used (after_block), the save (save), the history a rewind goes back in,
and what the session's `defs` shows (describe). The parts it is made of:
snapfile (the files and their format), changes (what a value's save learned,
and what tells that it did not change), restore (bringing a snapshot back)
and notices (what the next block says of a restart).
"""

import os
import sys
import types

from vis_sandbox import changes as _changes
from vis_sandbox import defs as _defs
from vis_sandbox import history as _history
from vis_sandbox import inplace as _inplace
from vis_sandbox import snapfile, wire
from vis_sandbox import standby as _standby
from vis_sandbox.lazy import module as _lazy
from vis_sandbox.restore import Restore
from vis_sandbox.snapfile import (
    COUNTER,
    MAX_SNAPSHOT_MB,
    MAX_VALUE_MB,
    SNAPSHOT,
    SPILL_DIR,
    UNSAVED,
    UNSAVED_MAX,
    VALUE_LIMIT,
    VALUES_BUDGET,
    MiB,
    over_budget,
    over_value,
)

ast = _lazy("ast", globals())
textwrap = _lazy("textwrap", globals())


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
        self.history = _history.History(folder, history_blocks, self.max_snapshot, snapfile.spills_of)
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
        self._cache = {}          # name -> _changes.Entry
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
        # the values after this process's last blocks, for a rewind in place
        self.kept = _inplace.Kept(min(_inplace.KEEP_BLOCKS, self.history.keep),
                                  min(_inplace.KEEP_BYTES, self.max_snapshot))

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
        for st in _changes.statements(tree.body):
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._learn_helper(st, lines, block)
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                self._learn_import(st, block)
            else:
                names = set()
                _changes.bound(st, names)
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
            "reads": _changes.global_reads(text),
        }
        # a new dict, never changed in place: helpers() trusts identity
        self._helpers[node.name] = {**self._helpers.get(node.name, {}), block: rec}
        self._imports.pop(node.name, None)
        self._version += 1

    def _learn_import(self, node, block):
        self._version += 1
        for name, text, root in _changes.import_text(node):
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
                b = _changes.block_of(fn)
                if b is not None and getattr(fn, "__qualname__", "").startswith(name + "."):
                    return entries.get(b)
            return entries[max(entries)]
        inner = value
        for _ in range(100):
            nxt = getattr(inner, "__wrapped__", None)
            if nxt is None:
                break
            inner = nxt
        b = _changes.block_of(inner)
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
                _changes.session_code(namespace.get(todo.pop()), namespace, found)
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
        if full or touched is None or touched & _changes.INDIRECT:
            touched = None
        else:
            touched = self._closure(namespace, touched)
            if touched is not None and touched & _changes.INDIRECT:
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
            self.kept.keep(self._history_block, self._cache)
            r = q[4]
            return {"changed": False, "saved": list(r["saved"]), "not_saved": dict(r["not_saved"]), "bytes": r["bytes"],
                    "names": r["names"], "preload": list(r["preload"])}
        imports, helpers, names = self._classify(namespace)
        paths = self._added_paths()

        entries = self._entries(namespace, names, touched)
        saved, spills, not_saved, status, size = self._place(names, entries, reasons)
        gone = [e.obj for n, e in self._cache.items() if n not in namespace]
        if gone:
            self.kept.forget(gone)
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
                  "not_saved": not_saved, "bytes": size,
                  "names": len(helpers) + len({n for n, _ in imports if n is not None}) + len(saved) + len(spills),
                  "preload": self._preload(namespace, imports, names)}
        # (values kept so that the ids stay theirs)
        self._quick = (keys, ids, values, self._version, result, list(sys.path))
        try:
            if manifest == self._last:
                self._write_counter()
                self._record_history()
                self.kept.keep(self._history_block, entries)
                return dict(result)
            try:
                # the blocks waiting for their link name the file this write replaces
                self.flush_history()
                snapfile.write(self.folder, self.next_block, manifest, helpers, entries)
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
        self.kept.keep(self._history_block, entries)
        result["changed"] = True
        return result

    def _entries(self, namespace, names, touched):
        """{name: _changes.Entry} of the variables names: the last save's where
        the value cannot have changed (touched: the names the blocks used,
        None for all), else a new one."""
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
                probe = _changes.probe(v, e.pins)
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

        return entries

    def _place(self, names, entries, reasons):
        """Where each value goes: (saved: [(name, data)] in snapshot.bin,
        spills: their rows, not_saved: {name: why}, status: {name: (saved,
        reason, size)}, the bytes saved). reasons say why names are not saved,
        where the caller knows better."""
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
                status[name] = (False, reason, _changes.size_of(e.obj))
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
        return saved, spills, not_saved, status, used + spilled

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
                snapfile.unlink(os.path.join(spill_dir, n))

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
        snapfile.unlink(os.path.join(self.folder, UNSAVED))
        return {"rewound_blocks": rewound, "rewound_files": self.history.files_of(rewound)}

    def rewind_in_place(self, namespace, block):
        """Restores the snapshot after block (rewind made it the one in
        force) into namespace, which the caller emptied, reusing the values
        this process keeps of it (inplace.InPlace); returns the restore's
        report. The records of what the blocks defined, imported and saved
        start anew, as a new process's would, and so do the sys.path
        entries a snapshot holds. What it raises leaves a state that the
        caller replaces with a restart."""
        try:
            added = {p for p, _ in self._added_paths()}
            sys.path[:] = [p for p in sys.path if p not in added]
            self._helpers, self._imports, self._star = {}, {}, []
            self._cache, self._status, self._lost, self._helper_memo = {}, {}, {}, {}
            self._last = self._quick = self._touched = None
            self._version += 1
            return _inplace.InPlace(self, namespace, self.kept.records[block], self.kept.verified).run()
        except BaseException:
            # the save as the process exits must not record this
            # half-restored state as a block's
            self._history_block = None
            self.kept.drop()
            raise
        finally:
            self.kept.unverify()  # the restore ran the snapshot's imports and helpers

    def verify_when_quiet(self, fd, quiet):
        """Kept.verify_ahead for the block a rewind back one block would go
        to, once the link fd has been quiet for quiet seconds."""
        block = self.history.parent(self.current) if self.kept.records else None
        if block is not None and self.kept.wants_verify(block):
            import select
            if not select.select([fd], [], [], quiet)[0]:
                self.kept.verify_ahead(block)

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
        """A new _changes.Entry for value (old: the last one of its name, or None).
        A spilled value whose parts are those of old's file keeps that file."""
        if type(value) in (str, bytes) and len(value) > VALUE_LIMIT:
            return _changes.Entry(value, immutable=True)
        e = _changes.pickled(value, self.max_value)
        if e.parts is not None and _changes.probe_worthy(value):
            probe = _changes.probe(value, None)
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

    # ---- restoring --------------------------------------------------------

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
            return Restore(self, namespace, frozenset(drop)).run()
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
            header, _ = snapfile.read(self.folder)
            self.next_block = max(self.next_block, int(header.get("next_block", 1)))
            held = [i["name"] for i in header.get("imports", []) if i.get("name")]
            for key in ("helpers", "variables", "spills"):
                held.extend(r["name"] for r in header.get(key, []))
            report["held"] = sorted(set(held) - self.protected)
        except Exception as e:
            report["unreadable"] = str(e)
        self._lost = {n: f"the snapshot was discarded: {reason}" for n in report["held"]}
        snapfile.unlink(path)
        self._history_block = self.current = None
        # the history stays: a rewind can still go back past the discard
        self._sweep(set())
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
        return (False, "not saved yet: it changed after the last save", _changes.size_of(value))

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
