"""Asks the embedded CPython whether a sandbox block compiles.

vis-agent sandbox repair runs this with the block in INPUT and reads OUTPUT:
"ok", or the SyntaxError's message, line, column (1-based characters) and
text, separated by NUL characters. Top-level await is allowed, as in the
sandbox. Warnings (such as invalid escape sequences) are not printed: the
block is only being checked, not run.
"""

import warnings

_ALLOW_TOP_LEVEL_AWAIT = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, without importing ast


def check(source):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "<block>", "exec", flags=_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as e:
        return "\0".join([e.msg or "invalid syntax", str(e.lineno or 0), str(e.offset or 0), e.text or ""])
    except ValueError as e:
        # "source code string cannot contain null bytes" before 3.12.
        return "\0".join([str(e), "0", "0", ""])
    return "ok"


OUTPUT = check(INPUT)  # noqa: F821 (set by vis-agent)
