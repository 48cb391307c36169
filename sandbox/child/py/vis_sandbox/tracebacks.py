"""How a block's error is told: its traceback without the runtime's frames,
and the line and column where it failed with an excerpt of that line."""

from vis_sandbox.lazy import module as _lazy

linecache = _lazy("linecache", globals())
traceback = _lazy("traceback", globals())


def trim(te, runtime_files):
    """Drops the runtime's frames (those of runtime_files anywhere,
    asyncio's above the block's first frame), in the exception and the
    ones it chains."""
    seen = set()
    while te is not None and id(te) not in seen:
        seen.add(id(te))
        stack = [f for f in te.stack if f.filename not in runtime_files]
        for i, f in enumerate(stack):
            if f.filename.startswith("<block "):
                stack = stack[i:]
                break
        te.stack = traceback.StackSummary.from_list(stack)
        te = te.__cause__ or te.__context__


def locate(e, filename):
    """The line, column (1-based) and "N: line" excerpt with a caret where
    the block failed: its innermost frame in this block (filename), else
    in an earlier one."""
    if isinstance(e, SyntaxError) and e.lineno:
        text = (e.text or "").rstrip("\n")
        return e.lineno, e.offset or 0, excerpt(e.lineno, text, e.offset or 0, 1)
    last = None
    for f in traceback.extract_tb(e.__traceback__):
        if f.filename == filename or (f.filename.startswith("<block ") and (last is None or last.filename != filename)):
            last = f
    if last is None:
        return 0, 0, ""
    text = linecache.getline(last.filename, last.lineno).rstrip("\n")
    col = getattr(last, "colno", None)
    end = getattr(last, "end_colno", None)
    if col is None or getattr(last, "end_lineno", last.lineno) != last.lineno:
        return last.lineno, 0, excerpt(last.lineno, text, 0, 0)
    return last.lineno, col + 1, excerpt(last.lineno, text, col + 1, max(1, (end or col + 1) - col))


def excerpt(line, text, column, width):
    head = f"{line}: "
    if column <= 0 or not text:
        return head + text
    return head + text + "\n" + " " * (len(head) + column - 1) + "^" * max(1, width)
