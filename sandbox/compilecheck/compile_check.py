"""Asks the embedded CPython whether a sandbox block, or a file, compiles.

vis-agent sandbox repair runs this with the block in INPUT and reads OUTPUT:
"ok", or the SyntaxError's message, line, column (1-based characters) and
text, separated by NUL characters. Top-level await is allowed, as in the
sandbox. vis-agent sandbox check gives a file instead: INPUT is FILE_MARK,
the file's name, a NUL, then its bytes one per character (U+0000 to
U+00FF), compiled as Python compiles a module file (its byte order mark
and coding declaration read, no top-level await). Warnings (such as
invalid escape sequences) are not printed: the code is only being
checked, not run.
"""

import warnings

_ALLOW_TOP_LEVEL_AWAIT = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, without importing ast
FILE_MARK = "\0file\0"


def check(source):
    if source.startswith(FILE_MARK):
        name, _, data = source[len(FILE_MARK):].partition("\0")
        source, filename, flags = data.encode("latin-1"), name, 0
    else:
        filename, flags = "<block>", _ALLOW_TOP_LEVEL_AWAIT
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, filename, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as e:
        return "\0".join([e.msg or "invalid syntax", str(e.lineno or 0), str(e.offset or 0), e.text or ""])
    except ValueError as e:
        # "source code string cannot contain null bytes" before 3.12.
        return "\0".join([str(e), "0", "0", ""])
    except (RecursionError, MemoryError) as e:
        return "\0".join([f"{type(e).__name__}: {e}", "0", "0", ""])
    return "ok"


OUTPUT = check(INPUT)  # noqa: F821 (set by vis-agent)
