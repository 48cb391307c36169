"""Brings a session's snapshot back into a new interpreter's namespace.

A Restore runs the snapshot step by step: its sys.path entries, imports,
helpers, the values in snapshot.bin, the spilled pickles (mapped), then the
spilled str and bytes (read on a thread meanwhile), and a second try for what
needed something defined later. What restored code raises goes into the
report, name by name, with why.
"""

import os
import sys
import zlib

from vis_sandbox import snapfile
from vis_sandbox.changes import Entry
from vis_sandbox.lazy import module as _lazy
from vis_sandbox.snapfile import SNAPSHOT, SPILL_DIR

linecache = _lazy("linecache", globals())

_INTERRUPTED = "restoring was interrupted"


class Restore:
    """One restore of state's snapshot (a State, whose records of imports,
    helpers and values it fills in) into namespace, but for the names in
    drop (a frozenset); run() does it and returns the report."""

    def __init__(self, state, namespace, drop):
        self.state = state
        self.namespace = namespace
        self.drop = drop
        self.skip = state.protected | drop
        self.dropped = set()
        self.report = {"imports": [], "functions": [], "classes": [], "variables": [], "paths": [], "lost": {},
                       "uses_lost": {}}
        self.lost = self.report["lost"]
        self.interrupted = False
        self.blob = None
        self.spilled = {}  # file -> the bytes of a str/bytes spill file, or the OSError reading it
        self.reader = None

    def run(self):
        st = self.state
        snapfile.remove_temps(st.folder, SNAPSHOT)
        snapfile.remove_temps(os.path.join(st.folder, SPILL_DIR))
        st.next_block = max(st.next_block, st._read_counter())
        if not os.path.exists(os.path.join(st.folder, SNAPSHOT)):
            unsaved = st._read_unsaved(0)
            return {"unsaved": unsaved, "no_snapshot": True} if unsaved else {}
        report = self.report
        try:
            header, self.blob = snapfile.read(st.folder)
        except Exception as e:
            report["error"] = f"the snapshot could not be read: {e}"
            return report
        st.next_block = max(st.next_block, int(header.get("next_block", 1)))
        unsaved = st._read_unsaved(int(header.get("next_block", 1)))
        if unsaved:
            report["unsaved"] = unsaved
        # sys.path first: the imports may need the folders a block added
        self._paths(header)
        spill_rows = [r for r in header.get("spills", []) if self._wanted(r["name"])]
        raw_rows = [r for r in spill_rows if r["type"] in ("str", "bytes")]
        self._start_reading(raw_rows)
        self.lost.update(header.get("not_saved", {}))
        self._imports(header)
        # helpers: registered in linecache under their block's name, then run;
        # one that needs a variable first is tried again after the variables.
        helpers = [h for h in header.get("helpers", []) if self._wanted(h["name"])]
        self._register_sources(helpers)
        pending = []
        for h in helpers:
            err = self._define(h)
            if err is not None:
                pending.append((h, err))
        failed_vars = self._values(header, spill_rows)
        self._raw_spills(raw_rows)
        # second chance for what needed something defined later
        for h, _ in pending:
            err = self._define(h)
            if err is not None:
                self.lost[h["name"]] = err
        for row, how in failed_vars:
            err = how(row)
            if err is None:
                report["variables"].append(row["name"])
            else:
                self.lost[row["name"]] = err
        return self._finish(header, helpers)

    def _wanted(self, name):
        if name in self.drop:
            self.dropped.add(name)
        return name not in self.skip

    def _paths(self, header):
        rows = [r for r in header.get("sys_path", []) if isinstance(r.get("path"), str)]
        for r in reversed([r for r in rows if r.get("front")]):
            if r["path"] not in sys.path:
                sys.path.insert(0, r["path"])
        for r in rows:
            if not r.get("front") and r["path"] not in sys.path:
                sys.path.append(r["path"])
        self.report["paths"] = [r["path"] for r in rows]

    def _start_reading(self, raw_rows):
        """Spill files of str and bytes are read on a thread while imports
        run and values are unpickled (a file read lets other Python code
        run); pickles are mapped, which takes no time."""
        if raw_rows:
            import threading
            self.reader = threading.Thread(target=self._read_spills, args=(raw_rows,), name="vis-restore-spills",
                                           daemon=True)
            self.reader.start()

    def _read_spills(self, raw_rows):
        for row in raw_rows:
            try:
                with open(os.path.join(self.state.folder, SPILL_DIR, row["file"]), "rb") as f:
                    self.spilled[row["file"]] = f.read()
            except OSError as e:
                self.spilled[row["file"]] = e

    def _exec(self, code, filename):
        """Runs code in the namespace: None, or why it failed."""
        if self.interrupted:
            return _INTERRUPTED
        try:
            exec(compile(code, filename, "exec"), self.namespace)
        except KeyboardInterrupt:
            self.interrupted = True
            return _INTERRUPTED
        except (Exception, SystemExit) as e:
            return f"could not be restored: {type(e).__name__}: {e}"
        return None

    def _imports(self, header):
        st, report, lost = self.state, self.report, self.lost
        for imp in header.get("imports", []):
            name, stmt = imp["name"], imp["stmt"]
            if name is not None and not self._wanted(name):
                continue
            err = self._exec(stmt, "<restore>")
            if name is None:
                if err is None:
                    st._star.append({"stmt": stmt, "block": 0, "line": 0})
                continue
            if err is None:
                if name not in report["imports"]:
                    report["imports"].append(name)
                st._imports.setdefault(name, []).append({"stmt": stmt, "block": 0, "line": 0})
                lost.pop(name, None)
            elif name not in report["imports"]:
                lost[name] = err

    @staticmethod
    def _register_sources(helpers):
        """Puts the helpers' sources in linecache under their block's name,
        beside what is there of that block already."""
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

    def _define(self, h):
        err = self._exec("\n" * (h["line"] - 1) + h["source"], f"<block {h['block']}>")
        if err is None:
            helpers = self.state._helpers
            helpers[h["name"]] = {**helpers.get(h["name"], {}), h["block"]: h}
            self.lost.pop(h["name"], None)
        return err

    def _unpickled(self, load):
        """Runs load(), which binds a value: None, or why it failed."""
        if self.interrupted:
            return _INTERRUPTED
        try:
            load()
        except KeyboardInterrupt:
            return _INTERRUPTED
        except (Exception, SystemExit) as e:  # any __setstate__ may raise anything
            return f"could not be restored: {type(e).__name__}: {e}"
        return None

    def _values(self, header, spill_rows):
        """Binds the variables in snapshot.bin, then the spilled pickles;
        returns those that failed, (row, how), for a second try."""
        failed = []
        values = [(r, self._load) for r in header.get("variables", []) if self._wanted(r["name"])]
        values += [(r, self._load_spilled) for r in spill_rows if r["type"] == "pickle"]
        for row, how in values:
            err = how(row)
            if err is None:
                self.report["variables"].append(row["name"])
            else:
                failed.append((row, how))
        return failed

    def _load(self, row):
        name = row["name"]
        data = self.blob[row["offset"]:row["offset"] + row["length"]]
        if zlib.crc32(data) != row["crc"]:
            return "could not be restored: its data in the snapshot is damaged"

        def bind():
            self.namespace[name] = snapfile.loads(data)
            self.state._cache[name] = Entry(self.namespace[name], data=bytes(data))
        return self._unpickled(bind)

    def _load_spilled(self, row):
        path = os.path.join(self.state.folder, SPILL_DIR, row["file"])
        try:
            view = snapfile.map_copy(path, row["size"])
        except FileNotFoundError:
            return f"could not be restored: its file {SPILL_DIR}/{row['file']} is missing"
        except (OSError, ValueError) as e:
            return f"could not be restored: {e}"
        sizes = [n for n, _ in row["parts"]]
        offsets, _ = snapfile.layout(sizes)
        parts = [view[o:o + n] for o, n in zip(offsets, sizes, strict=True)]
        if zlib.crc32(parts[0]) != row["parts"][0][1]:
            return f"could not be restored: its file {SPILL_DIR}/{row['file']} is damaged"

        def bind():
            value = snapfile.loads(parts[0], parts[1:])
            self.namespace[row["name"]] = value
            e = Entry(value)
            e.file, e.fp, e.size = row["file"], tuple(map(tuple, row["parts"])), row["size"]
            self.state._cache[row["name"]] = e
        return self._unpickled(bind)

    def _raw_spills(self, raw_rows):
        """Binds the spilled str and bytes the reader thread read."""
        if raw_rows:
            self.reader.join()
        for row in raw_rows:
            name = row["name"]
            try:
                raw = self.spilled[row["file"]]
                if isinstance(raw, OSError):
                    raise raw
                if len(raw) != row["size"]:
                    raise ValueError(f"its spill file has {len(raw)} bytes, not {row['size']}")
                value = raw.decode("utf-8", "surrogatepass") if row["type"] == "str" else raw
            except FileNotFoundError:
                self.lost[name] = f"could not be restored: its file {SPILL_DIR}/{row['file']} is missing"
                continue
            except (OSError, ValueError) as e:
                self.lost[name] = f"could not be restored: {e}"
                continue
            self.namespace[name] = value
            e = Entry(value, immutable=True)
            e.digest, e.size = row["file"], row["size"]
            self.state._cache[name] = e
            self.report["variables"].append(name)

    def _finish(self, header, helpers):
        """Completes the report and the state's records of what came back."""
        st, report, lost, dropped = self.state, self.report, self.lost, self.dropped
        report["variables"].sort()
        for h in helpers:
            if h["name"] not in lost:
                report["functions" if h["kind"] == "function" else "classes"].append(h["name"])
        why_dropped = "left out on request when the session restarted"
        st._lost = {**header.get("lost_before", {}), **lost, **{n: why_dropped for n in dropped}}
        if self.drop:
            report["dropped"] = sorted(dropped)
            report["not_found"] = sorted(self.drop - dropped)
        report["uses_lost"] = uses_lost({h["name"]: h.get("reads", []) for h in helpers if h["name"] not in lost},
                                        set(lost) | dropped)
        st._touched = set()
        # What came back is what the snapshot holds: the next save rewrites it
        # only when something differs (the lost names drop out of it).
        manifest = st._manifest_of(self.namespace)
        st._last = None if lost or dropped or self.interrupted else manifest
        st._history_block = None
        st.current = st._rewound_to or st.history.current(os.path.join(st.folder, SNAPSHOT))
        return report


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
