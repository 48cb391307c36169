# Test helper for package repair: a long-lived CPython that answers JSON
# requests, one per line on stdin, so tests need one process per version.
#   {"op": "compile", "src": ...} -> {"ok": true} or {"ok": false, "msg", "lineno", "offset", "text"}
#   {"op": "dump", "src": ...}    -> {"ok": true, "dump": ast.dump(...)} or the error as above
# The first line written is {"minor": N, "version": "3.N.P"}.
import ast
import json
import sys
import warnings

warnings.simplefilter("ignore")
FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def answer(req):
    src = req["src"]
    try:
        if req["op"] == "compile":
            compile(src, "<block>", "exec", flags=FLAGS, dont_inherit=True)
            return {"ok": True}
        tree = compile(src, "<block>", "exec", flags=FLAGS | ast.PyCF_ONLY_AST, dont_inherit=True)
        return {"ok": True, "dump": ast.dump(tree)}
    except SyntaxError as e:
        return {"ok": False, "msg": e.msg or "", "lineno": e.lineno or 0,
                "offset": e.offset or 0, "text": e.text or ""}
    except (ValueError, RecursionError, MemoryError) as e:
        return {"ok": False, "msg": "%s: %s" % (type(e).__name__, e),
                "lineno": 0, "offset": 0, "text": ""}


def main():
    out = sys.stdout
    out.write(json.dumps({"minor": sys.version_info[1], "version": sys.version.split()[0]}) + "\n")
    out.flush()
    for line in sys.stdin:
        out.write(json.dumps(answer(json.loads(line))) + "\n")
        out.flush()


main()
