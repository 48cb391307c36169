"""Turns an exception raised in vis-agent's in-process interpreter into data.

vis-agent's C shim calls format_error(exc) after the code it ran raised, and
hands the result to Go as a pyembed.PyError: the exception's type as python
names it in a traceback, str(exc), and the traceback python would print,
separated by NUL characters. It never raises itself: whatever part cannot be
formatted is replaced by a note saying so.
"""


def type_name(exc_type):
    """The name a traceback's last line gives the type: builtins and
    __main__ unqualified, every other module's types qualified."""
    module = getattr(exc_type, "__module__", None)
    name = getattr(exc_type, "__qualname__", None) or getattr(exc_type, "__name__", "?")
    if module in (None, "builtins", "__main__"):
        return name
    return f"{module}.{name}"


def format_error(exc):
    name = type_name(type(exc))
    try:
        message = str(exc)
    except BaseException as e:  # str() of the exception itself failed
        message = f"<str() failed: {type_name(type(e))}>"
    try:
        # Imported only now: most runs never raise, and traceback imports a
        # dozen modules.
        import traceback

        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except BaseException as e:  # anything: the formatter must not raise
        text = f"{name}: {message}\n(the traceback could not be formatted: {type_name(type(e))})\n"
    # NUL separates the fields; it cannot occur in a name, rarely in text.
    return "\0".join(s.replace("\0", "\\x00") for s in (name, message, text))
