"""A block's trailing expression, shown as Jupyter shows a cell's Out: the
repr of its value when it is not None, cut to ECHO_MAX characters so that
one big value cannot fill a model's context."""

import builtins
import sys

ECHO_MAX = 4096

# Builtin containers are shown through reprlib past this many items: the
# full repr of a ten-million-item list takes seconds and gigabytes before
# it is cut.
_BIG = 1000
_CONTAINERS = (list, tuple, dict, set, frozenset)


def text(value, limit=ECHO_MAX):
    """The repr of value as a trailing expression shows it; the session's
    own listings (their repr is their text, already bounded) are whole."""
    from vis_sandbox import defs, tools

    try:
        if isinstance(value, (defs.Listing, tools.Records, tools.Text)):
            return repr(value)
        if type(value) in _CONTAINERS and len(value) > _BIG:
            shown = _short_repr(value, limit)
        else:
            shown = repr(value)
    except Exception as e:  # noqa: BLE001 (a broken __repr__ is the value's, not the block's)
        return f"<repr of {type(value).__name__} failed: {type(e).__name__}: {e}>"
    if len(shown) > limit:
        shown = shown[:limit] + f"… (repr cut: {len(shown) - limit:,} more characters; print() or attach() shows it all)"
    return shown


def _short_repr(value, limit):
    import reprlib

    r = reprlib.Repr()
    r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdeque = 200
    r.maxdict = 100
    r.maxstring = r.maxother = r.maxlong = limit
    r.maxlevel = 4
    return f"{r.repr(value)}  # {len(value):,} items"


def displayhook(value):
    """sys.displayhook while a block's trailing expression runs."""
    if value is None:
        return
    builtins._ = None  # as the default hook: _ is not part of the repr
    sys.stdout.write(text(value) + "\n")
    builtins._ = value
