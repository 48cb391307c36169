"""Runs a sandbox session's blocks, one at a time, for the session's host.

serve() reads requests (one JSON object per line, see sandbox/protocol) on
the socket the host handed over, runs each block in the session's one
namespace, streams what the block prints as "out" events, and answers each
request with one final event. It is the main thread's loop: SIGINT from the
host lands in the block as KeyboardInterrupt.
"""

# Mapping without the collections package (os has imported
# _collections_abc already), and locks and the flusher thread on _thread:
# threading imports functools and so collections, milliseconds a new
# session's first block would wait for.
import _collections_abc

# _signal is what signal wraps: signal's import costs enum's
import _signal as signal
import _thread
import builtins
import faulthandler
import io
import os
import sys
import time
import types

from vis_sandbox import ahead as _ahead
from vis_sandbox import changes as _changes
from vis_sandbox import checks as _checks
from vis_sandbox import defs as _defs
from vis_sandbox import echo as _echo
from vis_sandbox import figures as _figures
from vis_sandbox import history as _history
from vis_sandbox import inplace as _inplace
from vis_sandbox import link as _link
from vis_sandbox import modules as _modules
from vis_sandbox import notices as _notices
from vis_sandbox import packages as _packages
from vis_sandbox import sources as _sources
from vis_sandbox import standby as _standby
from vis_sandbox import state as _state
from vis_sandbox import tools as _tools
from vis_sandbox import tracebacks as _tracebacks
from vis_sandbox import wire
from vis_sandbox.checks import syntax_fields
from vis_sandbox.lazy import module as _lazy
from vis_sandbox.link import Capture, Captured, Flusher, Interrupts, Link, Output

json = _lazy("json", globals())
traceback = _lazy("traceback", globals())

VERSION = 1
WARM_AFTER = 0.05  # seconds of a quiet link before an auto-import is done ahead

_TOP_LEVEL_AWAIT = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_ONLY_AST = 0x400  # ast.PyCF_ONLY_AST
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE

# Modules (and two names from them) every block finds bound.
AUTO_IMPORTS = ("json", "re", "os", "sys", "math", "time", "datetime", "pathlib",
                "collections", "textwrap", "base64", "hashlib", "shlex", "glob")
AUTO_NAMES = {"Path": ("pathlib", "Path"), "Counter": ("collections", "Counter")}
AUTO_ALL = frozenset(AUTO_IMPORTS) | frozenset(AUTO_NAMES)
PROTECTED = AUTO_ALL | {"session", "defs"} | frozenset(_tools.NAMES)
# Names through which a block reaches the namespace without naming what it
# reads there: a block using one gets every auto-imported name bound.
REACHES_ALL = frozenset({"globals", "vars", "locals", "dir", "exec", "eval", "modules", "__main__",
                         "__dict__", "__globals__", "f_globals", "__import__"})


class Session(_collections_abc.Mapping):
    """A read-only mapping whose keys are also attributes."""

    def __init__(self, values):
        object.__setattr__(self, "_values", dict(values))

    def __getitem__(self, key):
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"session has no {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError("session is read-only")

    def __delattr__(self, name):
        raise AttributeError("session is read-only")

    def __repr__(self):
        return "session(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"

    def __reduce__(self):
        # A variable holding session.access comes back after a restart as
        # a copy; without this, unpickling asks __getattr__ for _values
        # before __init__ set it, and recurses.
        return (Session, (self._values,))


class Driver:
    def __init__(self, link, interrupts, folder, info):
        self.link = link
        self.interrupts = interrupts
        self.folder = folder
        self.info = info
        module = types.ModuleType("__main__")
        # Classes a block defines are found by pickle as __main__.Name.
        sys.modules["__main__"] = module
        self.ns = module.__dict__
        self.ns["__builtins__"] = builtins
        settings = info.get("settings") or {}
        self.state = _state.State(folder, PROTECTED, workspace=(info.get("session") or {}).get("workspace"),
                                  max_value_mb=settings.get("max_value_mb") or _state.MAX_VALUE_MB,
                                  max_snapshot_mb=settings.get("max_snapshot_mb") or _state.MAX_SNAPSHOT_MB,
                                  history_blocks=settings.get("history_blocks") or _history.KEEP_BLOCKS)
        self.figures = None
        self.notice = ""
        self.saved = -1
        self.preload = []
        # The blocks answered but not saved yet, [(block, names)], and those
        # of them whose source the state has not learned yet, [(src, block, names)]
        self.pending = None
        self.unlearned = []
        self.protected = {}
        session = info.get("session") or {}
        _modules.watch = _modules.Watch([session.get("workspace")] + list((session.get("access") or {}).get("roots") or ()))

    def start(self, captured=None):
        """Restores the snapshot (or discards it, or leaves names out of
        it, as the host says) and binds the session's names. captured (a
        Captured) holds what restoring printed, once it is done."""
        info = self.info
        drop = info.get("drop") or ()
        # The session's packages (install()) before the restore imports.
        _packages.start(info.get("packages"))
        rewind_error, rewound = None, {}
        if info.get("rewind"):
            try:
                rewound = self.state.rewind(info["rewind"])
            except (OSError, ValueError) as e:
                # the snapshot in force comes back instead, and the notice says so
                rewind_error = f"the rewind to block {info['rewind']} failed: {e}"
        if info.get("discard"):
            report = self.state.discard(info["discard"])
        else:
            if os.path.exists(os.path.join(self.folder, _state.SNAPSHOT)):
                # From here a child that dies or hangs dies restoring: the
                # host starts the next one with the snapshot discarded.
                self.link.send({"ev": "restoring"})
            report = self.state.restore(self.ns, drop)
        restarted = bool(report)
        if restarted:
            reason = info.get("restart_reason") or "the previous sandbox process stopped"
            output, more = (captured.text(), captured.more_lines) if captured else ("", 0)
            if rewind_error:
                report["rewind_error"] = rewind_error
            report.update(rewound)
            self.notice = _notices.notice(reason, report, output, more,
                                        rewound=bool(info.get("rewind")) and not rewind_error)
        values = dict(info.get("session") or {})
        values["python"] = values.get("python") or sys.version.split()[0]
        values["restarted"] = restarted
        access = values.get("access") or {}
        if access.get("max_threads") and not access.get("thread_cap") and sys.version_info < (3, 12):
            cap_threads(access["max_threads"], "the sandbox's jail" if access.get("is_jailed") else "the sandbox session's policy")
        values["access"] = Session(access)
        self.protected["session"] = Session(values)
        self.protected["defs"] = _defs.make_defs(self.state, self.ns)
        # The host's functions (attach, shell, cat, ...); attach records
        # the block that runs.
        functions = _tools.Functions(self.ns, lambda: self.state.next_block)
        self.protected.update(functions.bound())
        if (info.get("settings") or {}).get("attach_figures", True):
            self.figures = _figures.Figures(functions.attach, lambda: self.state.next_block)
            self.figures.install()
        # Restored helpers may use any auto-imported name.
        self.bind_auto(None if restarted else ())
        self.ns.update(self.protected)
        if drop:
            # what was left out must not come back at the next start either
            self.after_restore_save()

    def after_restore_save(self):
        try:
            self.saved = self.state.save(self.ns, full=True).get("names", self.saved)
        except Exception:
            sys.__stderr__.write("vis-agent: the snapshot was not saved:\n" + traceback.format_exc())

    def bind_auto(self, names):
        """Imports and binds the auto-imported names among names (all of
        them for None, or when names can reach the namespace indirectly).
        They are imported when a block first needs them, not at start: a
        new session's first block does not wait for fourteen modules."""
        if names is None or not REACHES_ALL.isdisjoint(names):
            names = AUTO_ALL
        for name in AUTO_IMPORTS:
            if name in names and name not in self.protected:
                self.protected[name] = __import__(name)
        for name, (mod, attr) in AUTO_NAMES.items():
            if name in names and name not in self.protected:
                self.protected[name] = getattr(__import__(mod), attr)

    def warm_up(self, fd):
        """Between blocks, binds the auto-imported names no block needed
        yet, one at a time while the link is quiet (WARM_AFTER seconds
        without a request), so that a later block using one does not wait
        for its import, and a request that comes meanwhile waits for one
        import at most."""
        if len(self.protected) >= len(PROTECTED):
            return
        import select
        for name in [*AUTO_IMPORTS, *AUTO_NAMES]:
            if name in self.protected:
                continue
            if select.select([fd], [], [], WARM_AFTER)[0]:
                return
            self.bind_auto((name,))

    def compile(self, src, filename, echo):
        """The block's code objects: with echo, its trailing expression and
        every top-level call of a tool that shows a file (cat(a); cat(b))
        in 'single' mode, whose value sys.displayhook shows
        (echo.displayhook while a block runs), and the statements between
        them as they come."""
        if echo:
            # _ast, not ast: ast's own import (re, enum, contextlib) costs a
            # new session's first block 10-17 ms; the tree is the same as
            # ast.parse's.
            import _ast
            tree = compile(src, filename, "exec", flags=_ONLY_AST, dont_inherit=True)
            body = tree.body
            shown = {i for i, st in enumerate(body) if _shows_a_file(st, _ast)}
            # A __future__ import rules the whole block: not cut in pieces.
            if shown and any(isinstance(st, _ast.ImportFrom) and st.module == "__future__" for st in body):
                shown = set()
            if body and isinstance(body[-1], _ast.Expr):
                shown.add(len(body) - 1)
            if shown:
                codes, run = [], []
                for i, st in enumerate(body):
                    if i not in shown:
                        run.append(st)
                        continue
                    if run:
                        codes.append(compile(_ast.Module(run, []), filename, "exec", flags=_TOP_LEVEL_AWAIT, dont_inherit=True))
                        run = []
                    codes.append(compile(_ast.Interactive([st]), filename, "single", flags=_TOP_LEVEL_AWAIT, dont_inherit=True))
                if run:
                    codes.append(compile(_ast.Module(run, []), filename, "exec", flags=_TOP_LEVEL_AWAIT, dont_inherit=True))
                return codes
        return [compile(src, filename, "exec", flags=_TOP_LEVEL_AWAIT, dont_inherit=True)]

    def run(self, req):
        started = time.perf_counter()
        src = req.get("code", "")
        block = self.state.next_block
        filename = f"<block {block}>"
        try:
            codes = self.compile(src, filename, req.get("echo"))
        except (SyntaxError, ValueError) as e:
            self.link.send({"ev": "result", "syntax": syntax_fields(e)})
            return
        _sources.register(filename, src)
        names = set()
        for code in codes:
            _changes.code_names(code, names)
        self.bind_auto(names)
        result = {"error": None, "restarted": bool(self.notice), "notice": self.notice}
        if self.notice:
            self.link.send({"ev": "note", "kind": "restart", "data": self.notice})
            self.notice = ""
        self.ns.update(self.protected)
        # whether a rewind past it can be done in place (inplace.py): what
        # the names meant before it ran, then after
        reached_out = _inplace.reaches_out(names, self.ns, src)
        # A block may have replaced them; each block prints to the host,
        # and its trailing expression shows a bounded repr.
        sys.stdout, sys.stderr = _outputs
        sys.displayhook = _echo.displayhook
        error = None
        self.interrupts.install()
        self.interrupts.in_block = True
        try:
            # From here SIGINT is KeyboardInterrupt; the host holds back an
            # interrupt that comes earlier until it reads this.
            self.link.send({"ev": "running"})
            if self.figures is not None:
                self.figures.begin()
            for code in codes:
                value = eval(code, self.ns)
                if code.co_flags & _CO_COROUTINE:
                    run_coroutine(value)
        except BaseException as e:  # noqa: B036 (SystemExit and KeyboardInterrupt are block errors)
            error = e
        try:
            # the figures the block left open, as PNG attachments; still
            # interruptible (a huge figure) by the timeout
            if self.figures is not None:
                self.figures.flush()
        except BaseException as e:  # noqa: B036
            if error is None:
                error = e
        finally:
            self.interrupts.in_block = False
            self.interrupts.install()
        if os.getpid() != _SESSION_PID:
            # A forked process that came back here from the block: it
            # ends, as a forked process should, without the session's
            # result or snapshot.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1 if error is not None else 0)
        result["error"] = self.describe_error(error, filename) if error is not None else None
        error = None
        self.state.kept.ran(block, reached_out or _inplace.reaches_out(names, self.ns, src))
        self.after_checks(block, result)
        # Answer first, save after: the snapshot is written when the host
        # asks ("save", once the block's client has its result), in the
        # time the agent takes to read it. Until then a marker names what
        # a kill would lose, for the next restart's notice.
        self.unlearned.append((src, block, names))
        self.pending = (self.pending or []) + [(block, self.changed_names(names))]
        self.state.mark_unsaved(self.pending)
        result["snapshot"] = "saving"
        result["saved"] = -1
        result["block"] = block
        result["duration_ms"] = int((time.perf_counter() - started) * 1000)
        self.link.send({"ev": "result", "result": result})

    def after_checks(self, block, result):
        """What is checked after a block ran: the modules changed on disk
        (a note on stderr), the files it wrote (into result, for the host
        to check) and read."""
        try:
            stale = _modules.note(_modules.watch.changed(), os.getcwd())
        except Exception as e:  # a note, never a block's failure
            stale = f"vis-agent: the check of changed modules failed: {e}\n"
        if stale:
            sys.stderr.write(stale)
        flush_outputs()
        # The checked files written, for the host to check (and paths in a
        # .git, after which it looks there).
        written, more = _checks.take_written()
        if written or more:
            result["written"], result["written_more"] = written, more
            self.state.history.note_files(block, self.workspace_paths(written))
        read = _checks.take_read()
        if read:
            _ahead.note_read(read, written)

    def workspace_paths(self, paths):
        """paths, relative to the workspace where they lie in it."""
        ws = (self.info.get("session") or {}).get("workspace") or ""
        prefix = ws.rstrip(os.sep) + os.sep
        return [p[len(prefix):] if ws and p.startswith(prefix) else p for p in paths]

    def changed_names(self, names):
        """The session's variables and helpers among names (a block's
        code_names): what the block may have changed."""
        ns = self.ns
        return sorted(n for n in names if n in ns and n not in self.protected and not n.startswith("__")
                      and not isinstance(ns[n], types.ModuleType))

    def learn(self):
        """Lets the state learn what the blocks answered since the last save
        defined and imported, in order: before the next block runs (which
        may redefine it) or the save."""
        unlearned, self.unlearned = self.unlearned, []
        for src, block, names in unlearned:
            self.state.after_block(self.ns, src, block, names)

    def save_pending(self):
        """Saves the snapshot after the blocks answered since the last save
        (one save for several, when a block came before the host asked):
        the "saved" event (what the save did, the names it holds, the
        modules a standby should import ahead)."""
        if self.pending is None:
            return {"ev": "saved", "result": {"snapshot": "", "saved": -1}}
        self.pending = None
        snapshot = self.after()
        return {"ev": "saved", "result": {"snapshot": snapshot, "saved": self.saved, "preload": self.preload}}

    def after(self):
        """Learns the blocks and saves the snapshot: "saved", "unchanged", or
        "" when the save failed (the marker of what is unsaved stays)."""
        try:
            self.learn()
            report = self.state.save(self.ns)
            self.preload = report.get("preload") or []
            if report.get("changed") or self.saved < 0:
                self.saved = report.get("names", 0)
            if report.get("error"):
                sys.__stderr__.write(f"vis-agent: {report['error']}\n")
                return ""
            self.state.mark_saved()
            return "saved" if report.get("changed") else "unchanged"
        except Exception:
            sys.__stderr__.write("vis-agent: the snapshot was not saved:\n" + traceback.format_exc())
            return ""

    def describe_error(self, e, filename):
        te = traceback.TracebackException(type(e), e, e.__traceback__, compact=True)
        _tracebacks.trim(te, _RUNTIME_FILES)
        text = "".join(te.format())
        message = str(e) if not isinstance(e, KeyboardInterrupt) else "the block was interrupted"
        line, column, excerpt = _tracebacks.locate(e, filename)
        extra = _packages.hint(e)
        if extra:
            message += ". " + extra
            text += extra + "\n"
        name = getattr(e, "name", None)
        if isinstance(e, NameError) and name:
            why = self.state.lost_reason(name)
            if why:
                extra = f"{name!r} did not come back when the sandbox restarted: {why}"
                message += ". " + extra
                text += extra + "\n"
        # Clipped: a huge message (or a block's one long line, which the
        # traceback and the excerpt repeat) must fit in one message to the
        # host.
        clip = _link.clip
        return {"type": type(e).__name__, "message": clip(message), "line": line, "column": column,
                "excerpt": clip(excerpt), "traceback": clip(text)}

    def compile_check(self, req):
        if req.get("file"):
            # A file's bytes, one per character (see sandbox/protocol).
            syntax = _checks.compile_file(req.get("code", "").encode("latin-1"), req["file"])
            return {"ev": "compiled", "syntax": syntax} if syntax else {"ev": "compiled"}
        try:
            compile(req.get("code", ""), "<block>", "exec", flags=_TOP_LEVEL_AWAIT, dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            return {"ev": "compiled", "syntax": syntax_fields(e)}
        return {"ev": "compiled"}

    def take_notice(self, req):
        """The restart notice the next block would show (a rewind's), which
        the next block then does not show."""
        notice, self.notice = self.notice, ""
        return {"ev": "ok", "message": notice}

    def is_complete(self, req):
        """Whether Enter runs the input, by the rules of python's REPL (codeop,
        one statement at a time), or continues it; several statements that
        compile together are complete too (a pasted block)."""
        import codeop
        src = req.get("code", "")
        cc = codeop.CommandCompiler()
        cc.compiler.flags |= _TOP_LEVEL_AWAIT
        try:
            kind = "complete" if cc(src, "<input>", "single") is not None else "incomplete"
        except (SyntaxError, ValueError, OverflowError):
            try:
                compile(src, "<input>", "exec", flags=_TOP_LEVEL_AWAIT, dont_inherit=True)
                kind = "complete"
            except (SyntaxError, ValueError, OverflowError):
                kind = "invalid"
        return {"ev": "is_complete", "kind": kind}

    def completions(self, req):
        """The names completing a word in the session (rlcompleter's rules:
        globals, builtins and keywords; attributes after a dot). What an
        attribute's code prints meanwhile is dropped: the link carries one
        answer."""
        import rlcompleter
        self.bind_auto(None)
        self.ns.update(self.protected)
        text = req.get("code", "")
        names = []
        if text.strip():
            completer = rlcompleter.Completer(self.ns)
            saved = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = io.StringIO()
            try:
                for i in range(1000):
                    name = completer.complete(text, i)
                    if name is None:
                        break
                    names.append(name)
            except Exception:
                pass
            finally:
                sys.stdout, sys.stderr = saved
        return {"ev": "completions", "data": "\n".join(names)}

    def defs(self, req):
        if req.get("json"):
            return {"ev": "defs", "data": json.dumps(self.state.describe(self.ns))}
        try:
            text = _defs.listing(self.state, self.ns, name=req.get("name") or None,
                                 pattern=req.get("pattern") or None, limit=req.get("limit") or 20,
                                 offset=req.get("offset") or 0, details=bool(req.get("details")))
        except (TypeError, ValueError, KeyError) as e:
            return {"ev": "error", "message": str(e)}
        return {"ev": "defs", "data": str(text)}

    def history(self, req):
        """The block a rewind would go to (req's "to" or "back"), and the
        blocks of the history, as the host asks before it rewinds."""
        self.state.flush_history()
        h = self.state.history
        try:
            block = h.target(self.state.current, to=req.get("to") or None, back=req.get("back") or None)
        except ValueError as e:
            return {"ev": "error", "message": str(e)}
        return {"ev": "history", "history": {"block": block, "current": self.state.current or 0,
                                             "line": h.line(block), "blocks": h.blocks()}}

    def rewind_here(self, req):
        """Rewinds to block req["to"] in this process when it can (see
        inplace.py): answers "ok" with the "[Sandbox rewound]" notice
        (req["reason"] says why), or "ok" of kind "restart" saying why not,
        nothing changed; the host then restarts on that block's snapshot."""
        block, st = req.get("to"), self.state
        why = st.kept.refuses(block) if type(block) is int else "no block"
        if why is None and _modules.watch is not None and _modules.watch.stale():
            why = "a module of the session changed on disk"
        if why is not None:
            return {"ev": "ok", "kind": "restart", "message": why}
        try:
            rewound = st.rewind(block)
        except (OSError, ValueError) as e:
            return {"ev": "ok", "kind": "restart", "message": str(e)}
        # What restoring prints goes into the notice, as at a restart.
        captured = Captured()
        outputs = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = Capture(captured)
        try:
            self.ns.clear()
            self.ns.update(types.ModuleType("__main__").__dict__)
            self.ns["__builtins__"] = builtins
            report = st.rewind_in_place(self.ns, block)
        except BaseException as e:  # noqa: B036 (a bug here must not cost the session)
            # the restart restores the block's snapshot again
            return {"ev": "ok", "kind": "restart", "message": f"an internal error: {type(e).__name__}: {e}"}
        finally:
            sys.stdout, sys.stderr = outputs
            self.ns.update(self.protected)
        report.update(rewound)
        # the names the snapshot holds: the next save says, as a new process's
        self.pending, self.unlearned, self.notice, self.saved = None, [], "", -1
        notice = _notices.notice(req.get("reason"), report, captured.text(), captured.more_lines, rewound=True)
        return {"ev": "ok", "message": notice}

    def finish(self, full=True):
        # The last save before the host stops this child on purpose checks
        # every value again: a change made only through another module or
        # a thread escapes the per-block change detection. Files the
        # session left open are closed first: the process ends without
        # flushing them.
        try:
            self.pending = None
            self.learn()
            report = self.state.save(self.ns, full=full, reasons=close_files(self.ns))
            if not report.get("error"):
                self.state.mark_saved()
            self.state.flush_history()
        except Exception:
            sys.__stderr__.write("vis-agent: the last snapshot was not saved:\n" + traceback.format_exc())


# The tools whose result a block shows wherever it calls them at the top
# level, not only last: what they show is why they were called.
SHOWN_CALLS = frozenset({"cat", "grep"})


def _shows_a_file(st, _ast):
    return (isinstance(st, _ast.Expr) and isinstance(st.value, _ast.Call) and isinstance(st.value.func, _ast.Name)
            and st.value.func.id in SHOWN_CALLS)


def close_files(ns):
    """Flushes and closes the open file objects bound to the session's
    names; returns why each does not come back."""
    import io

    closed = {}
    for name, value in list(ns.items()):
        if not isinstance(value, io.IOBase) or value.closed or value in (sys.stdin, sys.stdout, sys.stderr):
            continue
        try:
            value.flush()
            value.close()
            closed[name] = "closed (its writes were flushed); open files do not come back"
        except Exception as e:
            closed[name] = f"closed, but flushing its writes failed ({type(e).__name__}: {e}); open files do not come back"
            try:
                value.close()
            except Exception:
                pass
    return closed


def run_coroutine(coro):
    import asyncio
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(coro)
    finally:
        loop.close()


# The runtime's own files, whose frames a block's traceback leaves out.
_RUNTIME_FILES = frozenset({__file__, _link.__file__, _tools.__file__, _packages.__file__})


def cap_threads(cap, policy):
    """Refuse a thread past cap (the main thread counted) where the C audit
    hook cannot, on CPython 3.10 and 3.11, which raise no audit event when
    a thread starts. Python code can undo this (the original is reachable),
    so it is the soft layer: the address-space cap still ends a thread
    bomb."""
    start = _thread.start_new_thread

    def start_new_thread(function, args, kwargs=None):
        if _thread._count() + 1 >= cap:
            raise RuntimeError(f"can't start a new thread: the cap of {cap} threads is reached ({policy})")
        if kwargs is None:
            return start(function, args)
        return start(function, args, kwargs)

    _thread.start_new_thread = start_new_thread
    if "threading" in sys.modules:  # else it takes the new one when imported
        sys.modules["threading"]._start_new_thread = start_new_thread


_outputs = ()
_os_write = os.write


# The session's interpreter process; a process its code forks is not it.
_SESSION_PID = 0

# The descriptors that are the session interpreter's own (sandbox/protocol:
# LinkFD, StacksFD, CallsFD).
_OWN_FDS = (3, 4, 5)


def _forked():
    """In a process the session's code forked (multiprocessing's workers,
    os.fork): it is not the session's interpreter. Its output goes to the
    descriptors 1 and 2 it inherited (the host forwards them as the block's
    output), and the link, the stacks and the host calls are the parent's
    alone: their descriptors become /dev/null, so that no later file takes
    their numbers for a message meant for the host."""
    global _outputs
    _outputs = ()
    os.write = _os_write
    try:
        faulthandler.unregister(signal.SIGUSR1)
    except (RuntimeError, ValueError):
        pass
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    for fd in _OWN_FDS:
        os.dup2(null, fd, inheritable=False)
    os.close(null)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)


def session_write(fd, data):
    """os.write as the session sees it: what Python code writes to file
    descriptor 1 or 2 goes the way print's output goes (the link), after
    what print left in the buffer, so the two come out in the order they
    were written. (The descriptors themselves are a pipe the host forwards
    on its own: output of C code and subprocesses keeps that way, and may
    overtake printed text still in the buffer.)"""
    if (fd == 1 or fd == 2) and _outputs:
        view = memoryview(data)  # TypeError for what os.write refuses
        _outputs[fd - 1].write(bytes(view).decode("utf-8", "surrogateescape"))
        return view.nbytes
    return _os_write(fd, data)


def flush_outputs():
    for out in _outputs:
        try:
            out.flush()
        except Exception:
            pass


# What the loop does with each request of the host (protocol.Op* of the
# child): the event that answers it (run sends its own). "exit" ends the
# loop (serve), and "restore" is a standby's (standby.wait).
REQUESTS = {
    "ping": lambda driver, req: {"ev": "pong"},
    "save": lambda driver, req: driver.save_pending(),
    "run": Driver.run,
    "compile": Driver.compile_check,
    "defs": Driver.defs,
    "history": Driver.history,
    "notice": Driver.take_notice,
    "rewind_here": Driver.rewind_here,
    "is_complete": Driver.is_complete,
    "completions": Driver.completions,
}


# The requests that run none of a block's code (Kept.unverify).
NO_CODE = frozenset({"ping", "history", "notice", "rewind_here"})


def serve(fd, stacks_fd, folder, info_json):
    """The child's main loop: serves the host on socket fd until it closes
    the link or asks the child to exit. stacks_fd receives every thread's
    stack when the host sends SIGUSR1 (faulthandler) before a kill."""
    global _outputs
    info = wire.loads(info_json)
    _sources.install()
    global _SESSION_PID
    _SESSION_PID = os.getpid()
    os.register_at_fork(after_in_child=_forked)
    faulthandler.register(signal.SIGUSR1, file=stacks_fd, all_threads=True, chain=False)
    interrupts = Interrupts()
    interrupts.install()
    link = Link(fd, interrupts)
    flusher = Flusher()
    outputs = (Output(link, "stdout", flusher), Output(link, "stderr", flusher))
    flusher.start(outputs)
    # What restoring prints goes into the restart notice, not to the host,
    # which waits for "ready".
    captured = Captured()
    _outputs = (Capture(captured), Capture(captured))
    sys.stdout, sys.stderr = _outputs
    os.write = session_write
    if info.get("standby"):
        info.update(_standby.wait(link, info))
    driver = Driver(link, interrupts, folder, info)
    driver.start(captured)
    for capture, output in zip(_outputs, outputs, strict=True):
        capture.target = output
    _outputs = outputs
    sys.stdout, sys.stderr = _outputs
    kernel = ((info.get("session") or {}).get("access") or {}).get("kernel") or {}
    link.send({"ev": "ready", "data": sys.version.split()[0], "line": sys.version_info.minor,
               "message": "; ".join(kernel.get("missing") or [])})
    _ahead.start((info.get("session") or {}).get("workspace"))
    full = True  # the last save checks every value again (see Driver.finish)
    while True:
        if driver.pending is None:
            driver.warm_up(fd)
            driver.state.flush_history_when_quiet(fd, WARM_AFTER)
            driver.state.verify_when_quiet(fd, WARM_AFTER)
            _ahead.idle(fd)
        req = link.receive()
        if req is None or req.get("op") == "exit":
            # Force: a rewind's exit, whose state is about to be replaced:
            # the last save checks only what the blocks named
            full = not (req and req.get("force"))
            break
        if req.get("v") != VERSION:
            link.send({"ev": "error", "message": f"protocol version {req.get('v')}, the driver speaks {VERSION}"})
            continue
        op = req.get("op")
        if op not in NO_CODE:
            # it may run a block's code, which may change a kept value
            driver.state.kept.unverify()
        if op == "run":
            # A block that came before the host asked for the save of the
            # last one (a script's next command): it runs first, and one
            # save after it covers both.
            driver.learn()
        elif op in ("defs", "history", "rewind_here") and driver.pending is not None:
            # defs() says what the snapshot holds, and a rewind's history
            # needs the last block's entry: saved first.
            driver.save_pending()
        answer = REQUESTS.get(op) if isinstance(op, str) else None
        if answer is None:
            link.send({"ev": "error", "message": f"unknown request {op!r}"})
            continue
        event = answer(driver, req)
        if event is not None:
            link.send(event)
    driver.finish(full)
    flush_outputs()
    # Threads a block started must not hold the process up, nor atexit
    # handlers run against a half-torn session: the host asked it to end.
    os._exit(0)
