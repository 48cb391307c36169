import os
import pathlib
import subprocess
import sys

import calc

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"


def test_add():
    assert calc.add(2, 3) == 5


def test_mean():
    assert calc.mean([1, 2, 3]) == 2


def test_tmp_path(tmp_path):
    (tmp_path / "x.txt").write_text("kept")
    assert (tmp_path / "x.txt").read_text() == "kept"


def test_a_subprocess_imports_the_project():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(SRC), env.get("PYTHONPATH")) if p
    )
    out = subprocess.run(
        [sys.executable, "-c", "import calc; print(calc.add(1, 1))"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert out.stdout.strip() == "2"
