# Test helper for package repair: a long-lived CPython that answers JSON
# requests, one per line on stdin, so tests need one process per version.
#   {"op": "compile", "src": ...} -> {"ok": true} or {"ok": false, "msg", "lineno", "offset", "text"}
#   {"op": "compile_file", "src": ...} -> as compile, as a module file (no top-level await)
#   {"op": "dump", "src": ...}    -> {"ok": true, "dump": ast.dump(...)} or the error as above
#   {"op": "stdlib"}              -> {"ok": true, "files": [...]}: the standard library's
#                                    top-level .py files, sorted
#   {"op": "segments", "src": PATH} -> {"ok": true, "segments": [...]}: the statements
#                                    of that file (see segments)
# The first line written is {"minor": N, "version": "3.N.P"}.
import ast
import io
import json
import os
import sys
import sysconfig
import textwrap
import tokenize
import warnings

warnings.simplefilter("ignore")
FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
MAX_LINES = 25
MAX_CHARS = 1500


def stdlib_files():
    root = sysconfig.get_paths()["stdlib"]
    return sorted(os.path.join(root, n) for n in os.listdir(root) if n.endswith(".py"))


def segments(path):
    """Statements of the file at path, at any depth, each dedented to column
    0 with its decorators: the source text, the byte spans of its string
    literals, the byte offsets of its closing brackets and of the starts
    of its logical lines. Statements too
    long to be a block, or that do not parse alone, are left out."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        tree = ast.parse(text)
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
        return []
    lines = text.splitlines(keepends=True)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        last = node.end_lineno
        if last - first >= MAX_LINES:
            continue
        chunk = lines[first - 1:last]
        if chunk[0][:node.col_offset].strip() if first == node.lineno else False:
            continue  # follows another statement on its line
        src = textwrap.dedent("".join(chunk))
        if len(src) > MAX_CHARS or not src.endswith("\n"):
            continue
        try:
            compile(src, "<seg>", "exec", flags=FLAGS, dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        sites = token_sites(src)
        if sites is not None:
            out.append(dict(src=src, **sites))
    return out


def token_sites(src):
    """Byte spans [start, end) of the string literals of src (an f-string
    as one literal, nested ones left out), byte offsets of its closing
    brackets outside f-strings and of the line starts of its logical
    lines, or None when src does not tokenize."""
    starts = [0]
    for line in src.splitlines(keepends=True):
        starts.append(starts[-1] + len(line.encode("utf-8")))
    lines = src.splitlines(keepends=True)

    def off(pos):
        row, col = pos
        return starts[row - 1] + len(lines[row - 1][:col].encode("utf-8"))

    strings, closers, logical = [], [], []
    depth = 0
    fstart = None
    at_start = True
    skip = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            name = tokenize.tok_name[tok.type]
            if tok.type == tokenize.NEWLINE:
                at_start = True
            elif at_start and tok.type not in skip:
                at_start = False
                logical.append(starts[tok.start[0] - 1])
            if name == "FSTRING_START":
                if depth == 0:
                    fstart = off(tok.start)
                depth += 1
            elif name == "FSTRING_END":
                depth -= 1
                if depth == 0:
                    strings.append([fstart, off(tok.end)])
            elif depth:
                continue
            elif tok.type == tokenize.STRING:
                strings.append([off(tok.start), off(tok.end)])
            elif tok.type == tokenize.OP and tok.string in ")]}":
                closers.append(off(tok.start))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return {"strings": strings, "closers": closers, "lines": logical}


def answer(req):
    op = req["op"]
    if op == "stdlib":
        return {"ok": True, "files": stdlib_files()}
    if op == "segments":
        return {"ok": True, "segments": segments(req["src"])}
    src = req["src"]
    try:
        if op == "compile":
            compile(src, "<block>", "exec", flags=FLAGS, dont_inherit=True)
            return {"ok": True}
        if op == "compile_file":
            # Bytes, as a file is read: a byte order mark is skipped.
            compile(src.encode("utf-8", "surrogatepass"), "file.py", "exec", dont_inherit=True)
            return {"ok": True}
        tree = compile(src, "<block>", "exec", flags=FLAGS | ast.PyCF_ONLY_AST, dont_inherit=True)
        return {"ok": True, "dump": ast.dump(tree)}
    except SyntaxError as e:
        return {"ok": False, "msg": e.msg or "", "lineno": e.lineno or 0,
                "offset": e.offset or 0, "text": e.text or ""}
    except (ValueError, RecursionError, MemoryError) as e:
        return {"ok": False, "msg": f"{type(e).__name__}: {e}",
                "lineno": 0, "offset": 0, "text": ""}


def main():
    out = sys.stdout
    out.write(json.dumps({"minor": sys.version_info[1], "version": sys.version.split()[0]}) + "\n")
    out.flush()
    for line in sys.stdin:
        out.write(json.dumps(answer(json.loads(line))) + "\n")
        out.flush()


main()
