"""The session's defs(): a short listing of its helpers and variables, never their values."""

from vis_sandbox.history import spans as _spans
from vis_sandbox.lazy import module as _lazy

hashlib = _lazy("hashlib", globals())
inspect = _lazy("inspect", globals())
re = _lazy("re", globals())

ROW_WIDTH = 120
DOC_WIDTH = 72


class Listing(str):
    """Text whose repr is the text itself, so an echoed defs() reads like print(defs())."""

    __slots__ = ()

    def __repr__(self):
        return str(self)


def _cut(text, width):
    return text if len(text) <= width else text[:width - 1] + "…"


def size_text(n):
    if n < 1024:
        return f"{n} B"
    if n < 1 << 20:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1 << 20):.1f} MiB"


def type_name(value):
    """The name a listing shows for a value's type."""
    t = type(value)
    mod = getattr(t, "__module__", "builtins")
    if mod in ("builtins", "__main__"):
        return t.__qualname__
    return f"{mod}.{t.__qualname__}"


def signature(name, value, kind):
    """How a helper is called, default values shown as their type: f(a, b=<int>)."""
    prefix = "class " if kind == "class" else ""
    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):
        return f"{prefix}{name}" if kind == "class" else f"{name}(...)"
    P = inspect.Parameter
    params = list(sig.parameters.values())
    parts = []
    star = False
    for i, p in enumerate(params):
        if p.kind == P.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = p.name
        if p.kind == P.VAR_POSITIONAL:
            text, star = "*" + p.name, True
        elif p.kind == P.VAR_KEYWORD:
            text = "**" + p.name
        if p.default is not P.empty:
            text += f"=<{type(p.default).__name__}>"
        parts.append(text)
        if p.kind == P.POSITIONAL_ONLY and (i + 1 == len(params) or params[i + 1].kind != P.POSITIONAL_ONLY):
            parts.append("/")
    return f"{prefix}{name}({', '.join(parts)})"


def _helper_row(name, value, rec):
    sig = signature(name, value, rec["kind"])
    n = rec["lines"]
    tail = f" | block {rec['block']} | {n} line{'s' if n != 1 else ''}"
    if rec["doc"]:
        tail += " | " + _cut(rec["doc"], DOC_WIDTH)
    return _cut(sig, max(20, ROW_WIDTH - len(tail))) + tail


def _variable_row(state, name, value, whole=False):
    """A variable's row, cut to ROW_WIDTH in a listing; whole for
    defs("name"), which shows all of the reason it was not saved."""
    saved, reason, size = state.variable_status(name, value)
    row = f"{name}: {type_name(value)}, {size_text(size)} | " + ("saved" if saved else f"not saved: {reason}")
    return row if whole else _cut(row, ROW_WIDTH)


def _dependencies(namespace, rec):
    present = [n for n in rec["reads"] if n in namespace]
    missing = [n for n in rec["reads"] if n not in namespace]
    return (f"reads: {', '.join(present) or '-'}"
            + (f"; missing: {', '.join(missing)}" if missing else ""))


def _check(name, pattern, limit, offset, details):
    if name is not None and not isinstance(name, str):
        raise TypeError(f"defs(): name must be a str or None, not {type(name).__name__}")
    regex = None
    if pattern is not None:
        if not isinstance(pattern, str):
            raise TypeError(f"defs(): pattern must be a str (a regular expression) or None, not {type(pattern).__name__}")
        try:
            regex = re.compile(pattern)
        except re.error as e:
            raise ValueError(f"defs(): pattern is not a valid regular expression: {e}") from None
    for arg, value, least in (("limit", limit, 1), ("offset", offset, 0)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"defs(): {arg} must be an int, not {type(value).__name__}")
        if value < least:
            raise ValueError(f"defs(): {arg} must be at least {least}, not {value}")
    if not isinstance(details, bool):
        raise TypeError(f"defs(): details must be True or False, not {type(details).__name__}")
    return regex


def _one(state, namespace, name, details):
    helpers = state.helpers(namespace)
    if name in helpers:
        rec = helpers[name]
        lines = [_helper_row(name, namespace[name], rec)]
        if details:
            lines.append(_dependencies(namespace, rec))
            lines.append("sha256: " + hashlib.sha256(rec["source"].encode()).hexdigest())
        lines.append("")
        lines.append(rec["source"].rstrip("\n"))
        return "\n".join(lines)
    variables = state.variables(namespace)
    if name in namespace and name in variables:
        return _variable_row(state, name, namespace[name], whole=True)
    if name in namespace and name not in state.protected:
        v = namespace[name]
        return f"{name}: {getattr(v, '__name__', type(v).__name__)} (imported)"
    text = f"No helper or variable named {name!r}."
    why = state.lost_reason(name)
    if why:
        text += f" It did not come back after the restart: {why}."
    else:
        import difflib

        near = difflib.get_close_matches(name, [*helpers, *variables], n=5, cutoff=0.6)
        if near:
            text += " Nearest names: " + ", ".join(near) + "."
    return text


def listing(state, namespace, name=None, pattern=None, limit=20, offset=0, details=False):
    """The text of defs(...) for this session."""
    regex = _check(name, pattern, limit, offset, details)
    if name is not None:
        return _one(state, namespace, name, details)
    helpers = state.helpers(namespace)
    variables = state.variables(namespace)
    if regex is not None:
        helpers = {n: r for n, r in helpers.items() if regex.search(n)}
        variables = [n for n in variables if regex.search(n)]
    rows = [("h", n) for n in helpers] + [("v", n) for n in variables]
    total = len(rows)
    page = rows[offset:offset + limit]
    head = f"defs: {len(helpers)} helper{'s' if len(helpers) != 1 else ''}, {len(variables)} variable{'s' if len(variables) != 1 else ''}"
    if pattern is not None:
        head += f" matching {pattern!r}"
    if not total:
        return "\n".join([head + ".", *(_history_line(state) if regex is None else ())])
    if not page:
        return head + f"; offset {offset} is past the last row ({total})."
    head += f"; rows {offset + 1}-{offset + len(page)} of {total}"
    out = [head]
    section = None
    for kind, n in page:
        if kind != section:
            section = kind
            out.append("helpers:" if kind == "h" else "variables:")
        if kind == "h":
            out.append("  " + _helper_row(n, namespace[n], helpers[n]))
            if details:
                out.append("    " + _dependencies(namespace, helpers[n]))
        else:
            out.append("  " + _variable_row(state, n, namespace[n]))
    rest = total - offset - len(page)
    if rest > 0:
        out.append(f"{rest} more: defs(offset={offset + len(page)}), or narrow with defs(pattern=...).")
    out.append('defs("name") shows a helper\'s source, or all of a variable\'s row.')
    out.extend(_history_line(state))
    return "\n".join(out)


def _history_line(state):
    """The blocks a rewind can go to, as a line of the listing (none
    without a history)."""
    blocks = state.history_blocks() if hasattr(state, "history_blocks") else []
    if not blocks:
        return []
    now = f" (the state is block {state.current}'s)" if state.current else ""
    return [f"Rewind can go to block{'s' if len(blocks) > 1 else ''} {_spans(blocks)}{now}: rewind_session(to=N), "
            "or sandbox rewind --to N."]


def make_defs(state, namespace):
    """The session's defs function, bound to its state and namespace."""

    def defs(name=None, *, pattern=None, limit=20, offset=0, details=False):
        """List the session's helpers and variables (never values).

        defs("name") shows a helper's source; details=True adds the names it
        reads and a SHA-256 of its source; pattern (a regular expression on
        names), limit and offset page the listing.
        """
        return Listing(listing(state, namespace, name, pattern, limit, offset, details))

    return defs
