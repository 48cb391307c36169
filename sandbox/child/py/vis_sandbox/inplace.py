"""A rewind in the live process: the values of a recent block's snapshot
that this process still holds, unchanged, come back as they are, without
a new process or unpickling them.

After each save the process keeps the save's records of the values
(changes.Entry: the value, and how its pickle was told unchanged), by
reference: a dict per block, shared while blocks change nothing. Kept is
bounded by a clear rule: the last KEEP_BLOCKS blocks this process saved
(none without a history: sandbox.history_blocks = 0), dropped oldest first
while the values they hold that the session no longer binds come to more
than KEEP_BYTES (their saved sizes: the estimate of the memory they keep
alive); and a value whose name a block deleted is let go of (del frees
memory as it did before).

A rewind to block T is done in place when this process saved T and still
keeps it, no block this process ran after T could have changed state the
snapshot does not hold (reaches_out: it imported, named a module, a
function or class of one, or globals()/exec/setattr..., itself or through
a helper it named), and no module of the session's own was changed on
disk. The namespace is then emptied and T's snapshot restored into it
through the restore path (restore.Restore: sys.path, imports, helpers
defined anew from their source, values, the same report and notice), but
that a value is bound from the kept one when that is proven the value the
snapshot holds (the probe below is done ahead while the session is idle,
for the block a rewind back one would go to, and holds until a request
that could run a block's code):

- its record is the snapshot's row (the same pickle, fingerprint or file),
- it is unchanged now: a small value pickles to the same bytes; a spilled
  pandas or numpy object value (the ones whose unpickling is slow) probes
  to the same fingerprint (changes.probe, whose pins have kept its
  elements alive since); a str, bytes or number cannot change,
- it holds no class or function a block defined, nor an instance of one
  (changes.of_main: the restore defines those anew, and a kept instance
  would keep the old class),
- and it shares no mutable object with a value reused before it (the
  snapshot gives each name its own copy).

Any other value is unpickled from the snapshot, as a restart would; a
rewind this module refuses is a restart on the snapshot (the host's).
"""

import types
import zlib

from vis_sandbox import changes as _changes
from vis_sandbox.restore import Restore
from vis_sandbox.snapfile import MARSHAL_TAG, MiB

KEEP_BLOCKS = 8
KEEP_BYTES = 256 * MiB

# The callables a block can name without reaching outside the session.
_SESSION_CODE = (types.FunctionType, type)


class Kept:
    """The save's records of the values after this process's last blocks."""

    def __init__(self, blocks=KEEP_BLOCKS, max_bytes=KEEP_BYTES):
        self.blocks = blocks  # none when the session keeps no history
        self.max_bytes = max_bytes
        self.records = {}       # block -> {name: Entry} of its snapshot's values
        # the newest block that may have changed what a snapshot does not
        # hold (reaches_out), 0 for none
        self.reached_out = 0
        self._last = (None, None)  # (the save's dict, its record): shared by blocks that changed nothing
        self._sizes = {}        # id(record) -> the saved sizes of its values
        # id(Entry) -> Entry probed unchanged while the session was idle,
        # since the last request that could run a block's code (unverify)
        self.verified = {}
        self._ahead = None      # the record verify_ahead looked at last

    def ran(self, block, reached_out):
        """Notes a block this process ran (reached_out: see reaches_out)."""
        if reached_out:
            self.reached_out = max(self.reached_out, block)

    def keep(self, block, cache):
        """Keeps the values of the save after block (cache: the save's
        {name: Entry}, which no later save changes in place)."""
        if block is None or not self.blocks:
            return
        if self._last[0] is cache:
            self.records[block] = self._last[1]
            self._trim(None)
            return
        # only what the snapshot holds: an unsaved value is not reused
        record = {n: e for n, e in cache.items() if e.reason is None and not e.too_big}
        self._last = (cache, record)
        self.records[block] = record
        self._sizes[id(record)] = sum(map(_size, record.values()))
        self._trim(record)

    def verify_ahead(self, block):
        """Probes, ahead of a rewind, the values of block's record that a
        rewind would probe (see InPlace._load_spilled): the session is
        idle, and a rewind soon after finds them verified unless a request
        that could run a block's code came in between (unverify)."""
        record = self.records.get(block)
        if record is None or record is self._ahead:
            return
        self._ahead = record
        for e in record.values():
            if e.probe is not None and id(e) not in self.verified:
                now = _changes.probe(e.obj, e.pins)
                if now is not None and now[0] == e.probe:
                    self.verified[id(e)] = e

    def wants_verify(self, block):
        """Whether verify_ahead(block) has anything to do."""
        record = self.records.get(block)
        return record is not None and record is not self._ahead

    def unverify(self):
        self.verified.clear()
        self._ahead = None

    def forget(self, values):
        """Lets go of values (those whose names a block deleted: del frees
        them, as without a history): a rewind reads them back."""
        ids = set(map(id, values))
        for record in self.records.values():
            for name in [n for n, e in record.items() if id(e.obj) in ids]:
                del record[name]

    def _trim(self, current):
        """Drops the oldest records past KEEP_BLOCKS, then while the values
        they alone hold (current: the values bound now, None when they did
        not change) come to more than max_bytes."""
        for b in sorted(self.records)[:-self.blocks]:
            del self.records[b]
        if current is None:
            return
        self._sizes = {id(r): self._sizes[id(r)] for r in self.records.values()}
        # what all of them hold, bound or not: more than what they alone
        # hold, so nothing to count on a save while it is under the bound
        if sum(self._sizes.values()) <= self.max_bytes:
            return
        live = {id(e.obj) for e in current.values()}
        while len(self.records) > 1 and self._held(live) > self.max_bytes:
            del self.records[min(self.records)]

    def _held(self, live):
        seen, held = set(live), 0
        for record in self.records.values():
            for e in record.values():
                if id(e.obj) not in seen:
                    seen.add(id(e.obj))
                    held += _size(e)
        return held

    def refuses(self, block):
        """Why a rewind to block cannot be done in place, or None."""
        if block not in self.records:
            return f"this process does not keep the values of block {block}"
        if self.reached_out > block:
            return f"block {self.reached_out} may have changed state the snapshot does not hold"
        return None

    def drop(self):
        self.records.clear()
        self._sizes.clear()
        self._last = (None, None)
        self.unverify()


def _size(e):
    """The saved size of an Entry's value: the estimate of its memory."""
    return len(e.data) if e.data is not None else e.size or 0


def reaches_out(names, namespace, source):
    """Whether a block (its source, and names: its code's names) may change
    what a snapshot does not hold (a module's state, the process's): it
    imports, uses globals()/exec/setattr..., or names a module, a function
    or class not a block's, or a helper whose code does."""
    if "import" in source or not names.isdisjoint(_changes.INDIRECT):
        return True
    try:
        todo, seen = list(names), set(names)
        while todo:
            v = namespace.get(todo.pop())
            if v is None:
                continue
            if isinstance(v, types.ModuleType) or callable(v) and not isinstance(v, _SESSION_CODE):
                return True
            if isinstance(v, _SESSION_CODE) or type(v).__module__ == "__main__":
                if getattr(v, "__module__", None) != "__main__":
                    return True
                found = set()
                _changes.session_code(v, namespace, found)
                if not found.isdisjoint(_changes.INDIRECT):
                    return True
                todo.extend(found - seen)
                seen |= found
    except Exception:  # a value's own __getattr__ may raise anything
        return True
    return False


class InPlace(Restore):
    """The restore of a snapshot into the emptied namespace of the process
    that saved it, reusing the values of kept ({name: Entry}, the block's
    record) it proves unchanged (see the module's doc)."""

    def __init__(self, state, namespace, kept, verified):
        super().__init__(state, namespace, frozenset())
        self.kept = kept
        self.verified = verified  # Kept.verified: probed already
        self.reached = set()  # the mutable objects the values reused so far hold
        self.raw_kept = {}
        self.reused = 0

    def _reuse(self, name, fits, unchanged):
        """The kept Entry of name when fits(entry) (its record is the row's)
        and unchanged(entry) gives the mutable objects it holds (None: it
        changed, or cannot be told), shared with no value reused before."""
        e = self.kept.get(name)
        if e is None:
            return None
        try:
            reach = unchanged(e) if fits(e) else None
        except BaseException:  # noqa: B036 (a value's __reduce__ may raise anything: then it is read back)
            return None
        if reach is None or not self.reached.isdisjoint(reach):
            return None
        self.reached |= reach
        return e

    def _bind(self, name, e):
        self.namespace[name] = e.obj
        self.state._cache[name] = e
        self.reused += 1

    def _load(self, row):
        def fits(e):
            return e.data is not None and len(e.data) == row["length"] and zlib.crc32(e.data) == row["crc"]

        def unchanged(e):
            if e.data[:1] == MARSHAL_TAG:
                return frozenset()  # None, a bool, a number, str or bytes
            return _changes.pickles_again(e.obj, e.data)

        e = self._reuse(row["name"], fits, unchanged)
        if e is None:
            return super()._load(row)
        self._bind(row["name"], e)
        return None

    def _load_spilled(self, row):
        def fits(e):
            return e.file == row["file"] and e.fp == tuple(map(tuple, row["parts"])) and e.probe is not None

        def unchanged(e):
            if self.verified.get(id(e)) is not e:
                now = _changes.probe(e.obj, e.pins)
                if now is None or now[0] != e.probe:
                    return None
            return _changes.reach(e.obj)

        e = self._reuse(row["name"], fits, unchanged)
        if e is not None:
            self._bind(row["name"], e)
            return None
        err = super()._load_spilled(row)
        e = self.state._cache.get(row["name"])
        if err is None and _changes.probe_worthy(e.obj):
            # probed as the snapshot holds it, so that a later rewind in
            # place can reuse it (a restart's restore leaves that to the
            # first save that pickles it again)
            e.probe, e.pins = _changes.probe(e.obj, None) or (None, None)
        return err

    def _start_reading(self, raw_rows):
        def fits(e):
            return e.immutable and e.kind() == row["type"] and e.digest == row["file"] and e.size == row["size"]

        for row in raw_rows:
            e = self._reuse(row["name"], fits, lambda e: frozenset())
            if e is not None:
                self.raw_kept[row["name"]] = e
        super()._start_reading([r for r in raw_rows if r["name"] not in self.raw_kept])

    def _raw_spills(self, raw_rows):
        for name, e in self.raw_kept.items():
            self._bind(name, e)
            self.report["variables"].append(name)
        super()._raw_spills([r for r in raw_rows if r["name"] not in self.raw_kept])

    def run(self):
        report = super().run()
        report["in_place"] = {"reused": self.reused, "read": len(report.get("variables", ())) - self.reused}
        return report
