# The time patch() spends checking a 2,000-line Python file, run as a
# sandbox block in an empty folder:
#   bin/vis-agent sandbox run --session bench sandbox/child/py/bench/patch_check.py
# The file is the standard library's argparse.py, cut after its last
# top-level statement ending before line 2,000 and filled up to 2,000
# lines with comments. Each edit appends a comment to a line of code, in
# turn " # b0" and " # b1", so every patch changes the file. Prints the
# median and 90th percentile of each kind of patch, after two warm-ups.
import ast
import sysconfig
import time

src = open(os.path.join(sysconfig.get_paths()["stdlib"], "argparse.py"), encoding="utf-8").read()
tree = ast.parse(src)
end = max(n.end_lineno for n in tree.body if n.end_lineno <= 2000)
lines = src.splitlines(keepends=True)[:end]
lines += [f"# filler {i}\n" for i in range(2000 - len(lines))]
text = "".join(lines)


def code_line(node):
    """A one-line statement in node's body whose line occurs once in the
    file, or None."""
    for stmt in ast.walk(node):
        if isinstance(stmt, (ast.Assign, ast.Return, ast.Expr, ast.AugAssign)) and stmt.lineno == stmt.end_lineno:
            line = lines[stmt.lineno - 1].rstrip("\n")
            if text.count(line) == 1:
                return line
    return None


tops = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.end_lineno <= end and code_line(n)]
small = min((n for n in tops if isinstance(n, ast.FunctionDef)), key=lambda n: n.end_lineno - n.lineno)
big = max((n for n in tops if isinstance(n, ast.ClassDef)), key=lambda n: n.end_lineno - n.lineno)


def bench(name, line, n):
    """Patches of two copies of the file, one without the check and one
    with it, in turn (so both see the same load); reports both, and the
    time the check adds, pair by pair. (A patch without the check leaves
    a file the session no longer knows to compile: the next checked edit
    of it compiles it whole.)"""
    unchecked, checked = [], []
    for i in range(n + 2):
        old, new = (line, line + " # b0") if i % 2 == 0 else (line + " # b0", line)
        for check, path, into in ((False, "plain.py", unchecked), (True, "big.py", checked)):
            t = time.perf_counter()
            patch(path, old, new, check=check)
            if i >= 2:
                into.append(time.perf_counter() - t)
    report("  patch(check=False)", list(unchecked))
    report("  patch()", list(checked))
    report(f"added by the check, {name}", [c - u for c, u in zip(checked, unchecked, strict=True)])


def report(name, times):
    times.sort()
    n = len(times)
    print(f"{name:<54} median {times[n // 2] * 1e3:6.2f} ms, p90 {times[int(n * 0.9)] * 1e3:6.2f} ms  ({n} runs)")


Path("big.py").write_text(text)
Path("plain.py").write_text(text)
print(f"big.py: {text.count(chr(10))} lines, {len(text.encode())} bytes; "
      f"small function {small.name} ({small.end_lineno - small.lineno + 1} lines), "
      f"class {big.name} ({big.end_lineno - big.lineno + 1} lines)")
runs = 40
bench("edit in a small function", code_line(small), runs)
bench(f"edit in class {big.name}", code_line(big), runs)
first = []
for i in range(runs // 2):
    Path(f"copy{i}.py").write_text(text)
    t = time.perf_counter()
    patch(f"copy{i}.py", code_line(small), code_line(small) + " # b0")
    first.append(time.perf_counter() - t)
report("patch(), first edit of the file in the session", first)
whole = []
for _ in range(runs // 2):
    t = time.perf_counter()
    compile(text.encode(), "big.py", "exec", dont_inherit=True)
    whole.append(time.perf_counter() - t)
report("compile() of the whole file, in the block", whole)
