"""The session's functions whose work the host does, bound in every block
without an import: attachments (attach, list_attachments, get_attachment,
read_attachment, show_attachment), tools (shell, cat, grep, patch), the
session's journal (read_session) and its own help (apropos, doc).

Each call is one request to the session's host through _vis_host.call, the
shim's one entry point (see sandbox/protocol, "Host calls"): a JSON header
and, for attachment bytes, a raw payload. The host answers for the session
it serves and checks every argument; an error comes back as the Python
exception it names, with a one-line message.

Results are records: r["field"] and r.field are the same, at any depth;
a name that is not a field raises KeyError or AttributeError listing the
fields there are; dict(r) and json.dumps(r) work.
"""

import builtins
import io
import os
import struct

from vis_sandbox import ahead as _ahead
from vis_sandbox import checks as _checks
from vis_sandbox.lazy import module as _lazy

# Imported at first use: a new session's first block does not wait for them.
json = _lazy("json", globals())
pathlib = _lazy("pathlib", globals())
re = _lazy("re", globals())

# protocol.MaxCallHeader: the most a call's header (its arguments) holds.
MAX_HEADER = 16 << 20
# The most compiles the host asks for in one patch (sandbox/host's bound).
MAX_PATCH_COMPILES = 64

# The exceptions a host error may name; anything else is a RuntimeError.
_ERRORS = {name: getattr(builtins, name) for name in (
    "FileNotFoundError", "PermissionError", "ValueError", "KeyError", "TimeoutError", "TypeError",
    "RuntimeError", "InterruptedError", "IsADirectoryError", "NotADirectoryError", "OSError",
    "ConnectionError", "ProcessLookupError")}


def call(op, args=None, payload=None):
    """One host call: (result, payload bytes or None), or the exception the
    host names."""
    import _vis_host  # built into the sandbox child only

    head = json.dumps({"op": op, "args": args or {}}, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogateescape")
    if len(head) > MAX_HEADER:
        raise ValueError(f"the arguments of {op} take {len(head) >> 20} MiB; a tool call carries at most {MAX_HEADER >> 20} MiB of them")
    raw, data = _vis_host.call(head, payload)
    answer = json.loads(raw)
    if not answer.get("ok"):
        err = answer.get("error") or {}
        raise _ERRORS.get(err.get("type"), RuntimeError)(err.get("message") or "the sandbox host gave no reason")
    return answer.get("result"), data


# Records.

def _wrap(value):
    if type(value) is dict:
        return Record(value)
    if type(value) is list:
        return [_wrap(v) for v in value]
    return value


def _fields(mapping):
    return ", ".join(map(str, mapping)) or "(none)"


class Record(dict):
    """A result map: r["name"] and r.name are the same field, at any depth.
    Dictionary names keep their meaning (r.items is the method; the field of
    that name is r["items"])."""

    __slots__ = ()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for key, value in dict.items(self):
            dict.__setitem__(self, key, _wrap(value))

    def __missing__(self, key):
        raise KeyError(f"{key!r} is not a field of this {self._kind()}; its fields: {_fields(self)}")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self:
            return self[name]
        raise AttributeError(f"{self._kind()} has no field {name!r}; its fields: {_fields(self)}")

    def __dir__(self):
        return sorted(set(dir(type(self))) | {k for k in self if isinstance(k, str) and k.isidentifier()})

    def _kind(self):
        return "record"

    def __repr__(self):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in self.items()) + "}"


def _short(value, width=60):
    text = repr(value)
    return text if len(text) <= width else text[:width - 5] + "…" + text[-4:]


class Records(list):
    """A list of records that prints one compact row per record."""

    __slots__ = ()

    def __repr__(self):
        if not self:
            return "(none)"
        return "\n".join(repr(r) for r in self)


def _size(n):
    n = int(n or 0)
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}".replace(".0 ", " ")


# Attachments.

class Attachment(Record):
    """An attachment's descriptor: id, filename, version, kind, media_type,
    size, sha256, commentable, created, session, block (and comments from
    get_attachment). Never the bytes: read_attachment reads them."""

    __slots__ = ()

    def _kind(self):
        return "attachment"

    def __repr__(self):
        g = self.get
        parts = [f"{g('filename')} v{g('version')}", g("media_type") or "", _size(g("size"))]
        if g("kind"):
            parts.append(f"kind {g('kind')}")
        parts.append("commentable" if g("commentable") else "read-only")
        comments = g("comments")
        if comments:
            parts.append(f"{len(comments)} comment" + ("s" if len(comments) > 1 else ""))
        parts.append(f"block {g('block')}")
        return f"<attachment {g('id')}: " + ", ".join(p for p in parts if p) + ">"


def _payload(data):
    """The bytes data stands for, and its default filename ("": the store
    makes one from the kind and media type)."""
    if isinstance(data, str):
        return data.encode("utf-8", "surrogateescape"), ""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data), ""
    if isinstance(data, pathlib.PurePath):
        path = pathlib.Path(data)
        if path.is_dir():
            raise IsADirectoryError(f"attach: {data} is a folder; attach its files one by one")
        with open(path, "rb") as f:  # under the session's jail, as any read
            return f.read(), path.name
    if type(data).__module__.startswith("matplotlib") and hasattr(data, "savefig"):
        buf = io.BytesIO()
        data.savefig(buf, format="png")
        return buf.getvalue(), "figure.png"
    raise TypeError("attach() takes str, bytes, bytearray, memoryview, a pathlib.Path or a matplotlib figure, "
                    f"not {type(data).__name__}")


def _text_arg(name, value, required=False):
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _ref(ref):
    if isinstance(ref, Attachment):
        return str(ref.get("id"))
    if isinstance(ref, bool) or not isinstance(ref, (str, int)):
        raise TypeError(f"an attachment is named by its id or filename, not {type(ref).__name__}")
    return str(ref)


def _version(version):
    if version is None:
        return 0
    if isinstance(version, bool) or not isinstance(version, int):
        raise TypeError(f"version must be an int (negative counts back from the latest), not {type(version).__name__}")
    return version


class JournalBlock(Record):
    """One block of the session's journal."""

    __slots__ = ()

    def _kind(self):
        return "journal block"

    def __repr__(self):
        g = self.get
        who = g("client") or "client"
        if g("client_id"):
            who += ": " + g("client_id")
        head = f"#{g('id')} {who} · {str(g('started'))[:19].replace('T', ' ')} · {g('status')} · {g('duration_ms')} ms"
        err = g("error")
        if err:
            head += f" · {err.get('type')}: {err.get('message')}"
        parts = [head, textwrap_indent(g("code") or "")]
        out = (g("output") or "").rstrip("\n")
        if out:
            lines = out.split("\n")
            if len(lines) > 10:
                lines = lines[:4] + [f"… {len(lines) - 8} more lines …"] + lines[-4:]
            parts.append("\n".join("  | " + line for line in lines))
        return "\n".join(parts)


class JournalBlocks(Records):
    """Blocks of the session's journal; each prints as its header, code and
    the first and last lines of its output."""

    __slots__ = ()

    def __repr__(self):
        if not self:
            return "(no finished blocks yet)"
        return "\n".join(repr(b) for b in self)


class Functions:
    """The session's host functions, bound to what the driver knows: its
    namespace (for apropos and doc) and the block that runs."""

    def __init__(self, ns, block):
        self.ns = ns
        self.block = block

    def attach(self, data, filename=None, kind=None, media_type=None, commentable=False):
        """Store data as an attachment of this session and return its descriptor.

        data: str (stored as UTF-8), bytes, bytearray, memoryview, a
        pathlib.Path inside the session's roots (its file is read), or a
        matplotlib figure (stored as PNG). The same filename again stores a
        new version; commentable=True lets people comment on this version."""
        payload, default = _payload(data)
        if not isinstance(commentable, bool):
            raise TypeError(f"commentable must be True or False, not {type(commentable).__name__}")
        args = {"filename": _text_arg("filename", filename) or default, "kind": _text_arg("kind", kind),
                "media_type": _text_arg("media_type", media_type), "commentable": commentable,
                "block": self.block()}
        result, _ = call("attach", args, payload)
        return Attachment(result)

    def list_attachments(self):
        """The session's attachments, newest first, as descriptors."""
        result, _ = call("attachments")
        return Records(Attachment(d) for d in result or ())

    def get_attachment(self, id_or_filename, version=None):
        """One attachment's descriptor with its comments. version: None or 0
        for the latest, N for version N, -1 for the one before the latest."""
        result, _ = call("attachment", {"ref": _ref(id_or_filename), "version": _version(version)})
        return Attachment(result)

    def read_attachment(self, id_or_filename, version=None, text=False):
        """An attachment's bytes (text=True: decoded from UTF-8 as str)."""
        _, data = call("attachment_read", {"ref": _ref(id_or_filename), "version": _version(version)})
        data = data or b""
        return data.decode("utf-8", "replace") if text else data

    def show_attachment(self, id_or_filename, version=None):
        """Print a short view of an attachment: its descriptor, then the head
        of a text, the format and pixel size of an image, or the type and
        size of other bytes."""
        d = self.get_attachment(id_or_filename, version)
        _, data = call("attachment_read", {"ref": str(d.get("id")), "version": 0})
        print(repr(d))
        print(describe_bytes(data or b"", d.get("media_type") or ""))

    # The session's journal.

    def read_session(self, n=20):
        """The session's latest n finished blocks (1 to 200), oldest first,
        from any client (run, repl, mcp): who ran each, its code, output,
        status and error. This block is not among them until it ends."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"n is how many of the latest blocks to read, an int, not {type(n).__name__}")
        result, _ = call("journal", {"n": n})
        return JournalBlocks(JournalBlock(b) for b in result or ())

    # Tools.

    def shell(self, cmd, timeout=300, cwd=None, wait=10):
        """Run a shell command through the host (confined by the session's
        jail) and return its handle: status ("running", "exited", "timed
        out", "stopped"), exit, out, err, hint (what to do instead, when it
        failed on what the jail keeps read-only, such as the workspace's
        .git); methods wait(), logs(n), stop().

        The call returns when the command ends or after wait seconds
        (wait=0: at once), whichever comes first; `await shell(...)` and
        r.wait() wait for the end. timeout (seconds) ends the command."""
        cmd = _text_arg("cmd", cmd, required=True)
        args = {"cmd": cmd, "timeout_ms": _millis("timeout", timeout), "cwd": _text_arg("cwd", os.fspath(cwd) if cwd is not None else None),
                "wait_ms": _millis("wait", wait, allow_zero=True)}
        result, _ = call("shell_start", args)
        return Shell(result)

    def cat(self, path, offset=0, limit=None):
        """Numbered lines of a text file inside the session's roots: limit
        lines (2000 by default) after skipping offset; the note says how to
        read on."""
        path = _path_arg(path)
        result, _ = call("cat", {"path": path, "offset": _int_arg("offset", offset),
                                 "limit": _int_arg("limit", limit or 0)})
        # A file read is often edited next: compiled ahead, its first
        # checked edit compiles only what the edit touches.
        _ahead.note(path)
        return Text(result)

    def grep(self, pattern, path=".", glob=None, limit=None):
        """Lines matching a regular expression (RE2 syntax) in the text
        files under path, as file:line:text rows; .gitignore'd and binary
        files are skipped; glob keeps only matching file names."""
        result, _ = call("grep", {"pattern": _text_arg("pattern", pattern, required=True), "path": _path_arg(path),
                                  "glob": _text_arg("glob", glob), "limit": _int_arg("limit", limit or 0)})
        return Text(result)

    def patch(self, path, old, new, check=True):
        """Replace the one exact occurrence of old with new in a file (written
        atomically) and return the unified diff; refused when old is
        missing or found more than once.

        A Python (.py, .pyi), JSON, TOML or YAML file is checked before it
        is written (check=False skips that): Python compiled by this
        session's Python. An edit that would break a file that parsed is
        refused with the error (ValueError; nothing is written), unless the
        repair engine has an exact fix, which is written instead and listed
        in corrections. The result's fields: path, diff (of what was
        written), checked (the checker, "" for none), corrections, version
        (this session's writes to the file), invalid (the file did not
        parse before the edit and still does not), note."""
        if not isinstance(check, bool):
            raise TypeError(f"check must be True or False, not {type(check).__name__}")
        args = {"path": _path_arg(path), "old": _text_arg("old", old, required=True),
                "new": _text_arg("new", new, required=True), "check": check, "compiled": {}}
        known = _ahead.key_of(args["path"]) if check else None
        if known:
            # The hash of the text this process compiled ahead: the host
            # takes it when the file still holds that text.
            args["known"] = known
        # The host may first ask for sources compiled by this session's
        # Python (it is busy running this block): each answer goes back
        # with the next call, until the host has what it needs.
        for _ in range(MAX_PATCH_COMPILES + 1):
            result, data = call("patch", args)
            ask = result.get("compile")
            if not ask:
                break
            args["compiled"][ask["key"]] = _checks.compile_file(data or b"", ask["name"])
        refused = result.get("refused")
        if refused:
            raise ValueError(refused)
        return Diff(result)

    def propose(self, message=""):
        """Attach the workspace's change against git's HEAD (tracked files
        changed and new files not ignored) as a commentable patch
        (proposal.patch, kind "patch") for the user to review and apply:
        `vis-agent sandbox attachment get proposal.patch`, then
        `git apply proposal.patch`. The workspace's .git is read-only in
        the jail: commits are the user's. Returns the attachment, or None
        when nothing changed."""
        import subprocess

        if not isinstance(message, str):
            raise TypeError(f"message must be a str, not {type(message).__name__}")
        # Read-only git: no index refresh, no lock (.git cannot be written).
        env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")

        def git(*args, ok=(0,)):
            try:
                r = subprocess.run(["git", *args], capture_output=True, env=env, timeout=300)
            except (OSError, subprocess.SubprocessError) as e:
                raise RuntimeError(f"propose: git could not run ({e})") from None
            if r.returncode not in ok:
                why = r.stderr.decode("utf-8", "replace").strip().splitlines()
                raise RuntimeError(f"propose: git {args[0]} failed ({why[-1] if why else r.returncode}): "
                                   "the workspace must be a git repository with a commit")
            return r.stdout

        git("rev-parse", "--verify", "-q", "HEAD")
        diff = git("diff", "--binary", "HEAD", "--", ".")
        for name in git("ls-files", "--others", "--exclude-standard", "-z", "--", ".").split(b"\0"):
            if name:
                diff += git("diff", "--binary", "--no-index", "--", "/dev/null", os.fsdecode(name), ok=(0, 1))
        if not diff.strip():
            return None
        head = "".join(f"# {line}\n" for line in message.splitlines()) if message else ""
        return self.attach(head.encode() + diff, filename="proposal.patch", kind="patch",
                           media_type="text/x-diff", commentable=True)

    # Packages.

    def install(self, *specs, requirements=None, project=None, extras=()):
        """Install packages into this session: install("pandas", "numpy>=2"),
        or a project's: install(requirements="requirements.txt"),
        install(project=".", extras=["tests"]).

        Requirements only (a name, extras, versions, markers; a file's
        requirement lines, read in the block). The host runs
        the pinned uv outside the jail, from the user's index, wheels only
        unless the user's config allows builds, into the session's own
        folder, after the environment's packages (never changed); they stay
        across restarts and import at once. Returns what was installed and
        how long it took."""
        from vis_sandbox import packages

        return packages.install(*specs, requirements=requirements, project=project, extras=extras)

    def reload(self, name):
        """Import a package (or module) of this session afresh after its
        source changed: reload("attr"). Every submodule imported before is
        imported again, in the order the package imports them, and the
        session's names bound to its modules, classes and functions are
        bound to the new ones; objects made before keep their old classes.
        Returns what it reloaded and what it could not."""
        from vis_sandbox import modules

        return modules.reload(name, self.ns)

    # Help.

    def apropos(self, pattern=None):
        """The session's functions and tools whose name or summary matches
        pattern (a regular expression, case-insensitive; None: all), as
        (type, name, summary) rows."""
        if pattern is not None and not isinstance(pattern, str):
            raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
        try:
            match = re.compile(pattern or "", re.IGNORECASE).search
        except re.error:
            match = re.compile(re.escape(pattern), re.IGNORECASE).search
        rows = Rows()
        for kind, name, obj in self._symbols():
            summary = _summary(obj)
            if match(name) or match(summary):
                rows.append(Row((kind, name, summary)))
        return rows

    def doc(self, name_or_obj):
        """Print the signature and docstring of a session function, a tool,
        an apropos row or any object."""
        import inspect

        obj = name_or_obj
        if isinstance(obj, Row):
            obj = obj[1]
        name = None
        if isinstance(obj, str):
            name = obj
            if name not in self.ns:
                known = [n for _, n, _ in self._symbols()]
                raise KeyError(f"no function or tool named {name!r} in this session; apropos() lists them ({', '.join(known[:20])})")
            obj = self.ns[name]
        name = name or getattr(obj, "__name__", None)
        name = name or type(obj).__name__
        try:
            head = name + str(inspect.signature(obj))
        except (TypeError, ValueError):
            head = name
        text = inspect.getdoc(obj) if (callable(obj) or inspect.ismodule(obj)) else None
        print(head)
        print(textwrap_indent(text) if text else f"    {name} carries no docstring")

    def _symbols(self):
        """(type, name, object) of the tools, then the session's own
        functions and classes, by name."""
        import inspect

        out = [("tool", n, self.ns.get(n)) for n in sorted(NAMES) if n in self.ns]
        if "defs" in self.ns:
            out.append(("helper", "defs", self.ns["defs"]))
        own = []
        for name, obj in list(self.ns.items()):
            if name.startswith("_") or name in NAMES:
                continue
            if inspect.isfunction(obj) and obj.__module__ == "__main__":
                own.append(("function", name, obj))
            elif inspect.isclass(obj) and obj.__module__ == "__main__":
                own.append(("class", name, obj))
        return out + sorted(own, key=lambda t: t[1])

    def bound(self):
        """The functions to bind in the session, by name."""
        return {name: getattr(self, name) for name in NAMES}


NAMES = ("attach", "list_attachments", "get_attachment", "read_attachment", "show_attachment",
         "shell", "cat", "grep", "patch", "propose", "install", "reload", "apropos", "doc", "read_session")


def textwrap_indent(text):
    return "\n".join("    " + line if line else "" for line in text.splitlines())


def _summary(obj):
    """The first sentence of obj's docstring, on one line."""
    import inspect

    doc = inspect.getdoc(obj) if obj is not None else None
    if not doc:
        return ""
    para = " ".join(doc.strip().split("\n\n")[0].split())
    end = para.find(". ")
    return para if end < 0 else para[:end + 1]


def _millis(name, seconds, allow_zero=False):
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{name} is a number of seconds, not {type(seconds).__name__}")
    if seconds < 0 or (seconds == 0 and not allow_zero):
        bound = "0 seconds or more" if allow_zero else "more than 0 seconds"
        raise ValueError(f"{name} must be {bound}, not {seconds}")
    return int(seconds * 1000)


def _int_arg(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be 0 or more, not {value}")
    return value


def _path_arg(path):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or a path, not {type(path).__name__}")
    return os.fspath(path)


class Text(Record):
    """A tool's result that prints as its text (cat's numbered lines,
    grep's rows, patch's diff) followed by its note."""

    __slots__ = ()
    _main = "text"

    def _kind(self):
        return "result"

    def __repr__(self):
        text = str(dict.get(self, self._main) or "")
        note = dict.get(self, "note") or ""
        if note and note not in text:
            text = text + ("" if not text or text.endswith("\n") else "\n") + f"({note})"
        return text.rstrip("\n")

    __str__ = __repr__


class Diff(Text):
    """patch's result: prints as its unified diff."""

    __slots__ = ()
    _main = "diff"


class Row(tuple):
    """One apropos row: (type, name, summary), also as row.type, row.name,
    row.summary and row["name"]."""

    __slots__ = ()
    _fields = ("type", "name", "summary")

    def __getattr__(self, name):
        if name in Row._fields:
            return self[Row._fields.index(name)]
        raise AttributeError(f"row has no field {name!r}; its fields: {', '.join(Row._fields)}")

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in Row._fields:
                raise KeyError(f"{key!r} is not a field of this row; its fields: {', '.join(Row._fields)}")
            key = Row._fields.index(key)
        return tuple.__getitem__(self, key)

    def __repr__(self):
        kind, name, summary = self
        line = f"{kind:<8} {name:<18} {summary}"
        return line if len(line) <= 110 else line[:109] + "…"


class Rows(Records):
    """apropos' rows, printed one compact row each."""

    __slots__ = ()


# Shell handles.

# Fields that do not change while a command runs.
_FIXED = frozenset({"id", "command", "cwd", "timeout", "confined", "kernel"})


class Shell(Record):
    """A shell command's handle: status, exit, out, err and the rest of its
    fields read live while it runs; wait(), logs(n) and stop(). Awaiting it
    waits for the end."""

    __slots__ = ()

    # A handle is one command: equal to itself only, and hashable, so that
    # asyncio.gather(shell(...), shell(...)) takes several.
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__

    def _kind(self):
        return "shell handle"

    def _update(self, fields):
        for key, value in (fields or {}).items():
            dict.__setitem__(self, key, _wrap(value))
        return self

    def __getitem__(self, key):
        if key not in _FIXED and dict.get(self, "status") == "running":
            self.refresh()
        return dict.__getitem__(self, key)

    def refresh(self):
        """Read the command's state again; returns the handle."""
        result, _ = call("shell_state", {"id": dict.__getitem__(self, "id")})
        return self._update(result)

    def wait(self, timeout=None):
        """Wait until the command ends (or timeout seconds pass) and return
        the handle."""
        # max_ms 0 is no bound but the command's own timeout.
        max_ms = 0 if timeout is None else max(1, _millis("timeout", timeout, allow_zero=True))
        args = {"id": dict.__getitem__(self, "id"), "max_ms": max_ms}
        result, _ = call("shell_wait", args)
        return self._update(result)

    def logs(self, n=-20):
        """Output lines (stdout and stderr as they came): the first n, or
        with a negative n the last -n."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"n must be an int, not {type(n).__name__}")
        result, _ = call("shell_logs", {"id": dict.__getitem__(self, "id"), "n": n})
        return "\n".join(result.get("lines") or ()) if isinstance(result, dict) else result

    def stop(self):
        """Stop the command (its whole process group) and return the handle."""
        result, _ = call("shell_stop", {"id": dict.__getitem__(self, "id")})
        return self._update(result)

    def __await__(self):
        return self._waiting().__await__()

    async def _waiting(self):
        import asyncio

        # Short waits between event-loop turns, so several handles awaited
        # together each make progress.
        while True:
            result, _ = call("shell_wait", {"id": dict.__getitem__(self, "id"), "max_ms": 200})
            self._update(result)
            if dict.get(self, "status") != "running":
                return self
            await asyncio.sleep(0)

    def __repr__(self):
        g = lambda k: dict.get(self, k)  # noqa: E731 (a repr does not refresh)
        parts = [g("status") or "?"]
        if g("exit") is not None:
            parts.append(f"exit {g('exit')}")
        if g("status") == "timed out":
            parts.append(f"timeout {g('timeout'):g} s")
        for stream in ("out", "err"):
            total, cut = g(stream + "_bytes") or 0, g(stream + "_cut") or 0
            if total:
                text = f"{stream} {_size(total)}"
                if cut:
                    text += f" ({_size(cut)} cut from r.{stream}; r.logs(n) reads lines)"
                parts.append(text)
        head = f"<shell {g('id')} {g('command')!r}: " + ", ".join(parts) + ">"
        if g("spool"):
            head += f"\nspool: {g('spool')}"
        for stream in ("out", "err"):
            lines = str(g(stream) or "").rstrip("\n").splitlines()[-SHOWN_LINES:]
            if lines:
                head += f"\n{stream} (last {len(lines)} lines):\n" + "\n".join("  " + _cut_line(ln) for ln in lines)
        if g("hint"):
            head += f"\nhint: {g('hint')}"
        return head


# How many of its last lines of each stream a shell handle's repr shows.
SHOWN_LINES = 5


def _cut_line(line, width=200):
    return line if len(line) <= width else line[:width - 1] + "…"


# Short views of bytes.

def image_info(data):
    """(format, width, height) of a PNG, GIF, JPEG or WebP image, else None."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return "PNG", w, h
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return "GIF", w, h
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            return "WebP", 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
        if chunk == b"VP8 ":
            w, h = struct.unpack("<HH", data[26:30])
            return "WebP", w & 0x3FFF, h & 0x3FFF
        if chunk == b"VP8L" and len(data) >= 25:
            bits = int.from_bytes(data[21:25], "little")
            return "WebP", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            length = struct.unpack(">H", data[i + 2:i + 4])[0]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return "JPEG", w, h
            i += 2 + length
    return None


def describe_bytes(data, media_type="", head_lines=20, head_bytes=2000):
    """A short view of bytes: the head of a text, an image's format and
    pixel size, or the type and size of anything else."""
    image = image_info(data)
    if image:
        fmt, w, h = image
        return f"{fmt} image, {w}x{h} pixels, {_size(len(data))}"
    if b"\x00" not in data[:8000]:
        try:
            text = data[:head_bytes * 2].decode("utf-8")
        except UnicodeDecodeError as e:
            text = data[:e.start].decode("utf-8") if e.start > len(data[:head_bytes * 2]) - 4 else None
        if text is not None:
            lines = text[:head_bytes].splitlines()
            head = "\n".join(lines[:head_lines])
            total = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
            shown = min(len(lines), head_lines)
            more = f"\n… {total - shown} more lines ({_size(len(data))} in all; read_attachment(..., text=True) reads it)" if total > shown or len(data) > head_bytes else ""
            return head + more
    return f"{media_type or 'binary data'}, {_size(len(data))}"
