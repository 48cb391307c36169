"""Tests of vis_sandbox.packages: the package folder on sys.path and its
.pth files, the environment's pins, install()'s result and the hints of a
block's error (install() itself runs through the built binary:
cmd/vis-agent/install_test.go)."""

import os
import ssl
import sys
import tempfile
import unittest
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vis_sandbox import packages  # noqa: E402


class LayerTest(unittest.TestCase):
    def setUp(self):
        self.path = list(sys.path)
        self.dir = tempfile.mkdtemp()
        self.addCleanup(setattr, sys, "path", self.path)
        self.addCleanup(setattr, packages, "LAYER", packages.LAYER)
        self.addCleanup(packages._read_pth.clear)

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def test_after_everything_and_pth_read_once_quietly(self):
        os.mkdir(os.path.join(self.dir, "extra"))
        self.write("a.pth", "extra\nimport sys; print('loud'); sys.vis_pth_runs = getattr(sys, 'vis_pth_runs', 0) + 1\n")
        self.addCleanup(lambda: sys.__dict__.pop("vis_pth_runs", None))
        packages.start(self.dir)
        self.assertEqual(sys.path[-2:], [self.dir, os.path.join(self.dir, "extra")])
        self.assertEqual(sys.vis_pth_runs, 1)
        # Only new .pth files are read after an install.
        self.write("b.pth", "import sys; sys.vis_pth_runs += 10\n")
        self.assertEqual(packages._read_new_pth(), "")
        self.assertEqual(sys.vis_pth_runs, 11)

    def test_pins_leave_the_layer_out(self):
        for folder, name, version in ((self.dir, "in-layer", "1.0"), (tempfile.mkdtemp(), "Base_Pkg", "2.0.post1"),
                                      (tempfile.mkdtemp(), "legacy", "1.0-foo bar")):
            info = os.path.join(folder, f"{name}-{version}.dist-info")
            os.mkdir(info)
            with open(os.path.join(info, "METADATA"), "w") as f:
                f.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
            if folder != self.dir:
                sys.path.append(folder)
        packages.start(self.dir)
        pins = packages.base_pins()
        self.assertIn("Base_Pkg==2.0.post1", pins)
        self.assertFalse([p for p in pins if p.startswith(("in-layer", "legacy"))], pins)


class ResultTest(unittest.TestCase):
    def test_repr(self):
        r = packages.Installed({"installed": [{"name": "pandas", "version": "2.2.3"}, {"name": "pytz", "version": "2025.2"}],
                                "in_base": [{"name": "numpy", "version": "2.2.6"}], "removed": [], "seconds": 1.26})
        self.assertEqual(repr(r), "installed 2 packages in 1.3 s: pandas 2.2.3, pytz 2025.2; from the environment: numpy 2.2.6")
        self.assertEqual(r.installed[0].name, "pandas")
        self.assertEqual(repr(packages.Installed({"installed": [], "seconds": 0.04})),
                         "nothing new to install (0.0 s): the requirements are met")

    def test_arguments(self):
        with self.assertRaisesRegex(TypeError, "one or more requirements"):
            packages.install()
        with self.assertRaisesRegex(TypeError, "as str, not int"):
            packages.install(3)


class HintTest(unittest.TestCase):
    def test_missing_modules(self):
        for name, dist in (("sklearn", "scikit-learn"), ("cv2", "opencv-python"), ("PIL.Image", "pillow"),
                           ("yaml", "pyyaml"), ("some_pkg", "some-pkg")):
            e = ModuleNotFoundError(f"No module named {name!r}", name=name)
            self.assertEqual(packages.hint(e), f'install("{dist}") installs it into this session (no restart needed)')
        # A module missing inside a package that is there is not a package to install.
        self.assertEqual(packages.hint(ModuleNotFoundError("x", name="os.nothing")), "")
        self.assertEqual(packages.hint(ValueError("x")), "")

    def test_tls(self):
        inner = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
        wrapped = urllib.error.URLError(inner)
        for e in (inner, wrapped):
            self.assertIn("SSL_CERT_FILE", packages.hint(e))
        try:
            try:
                raise inner
            except ssl.SSLError as e:
                raise RuntimeError("a library's own error") from e
        except RuntimeError as e:
            self.assertIn("SSL_CERT_FILE", packages.hint(e))
        self.assertNotIn("\n", packages.hint(inner))


if __name__ == "__main__":
    unittest.main()


class RequirementsFileTest(unittest.TestCase):
    def test_lines_includes_hashes_and_refusals(self):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "requirements.txt"), "w") as f:
            f.write("# the project's\nsix==1.17.0  # pinned\n-r dev/more.txt\n-c constraints.txt\n"
                    "attrs>=24 \\\n    ; python_version >= '3.8'\nrich --hash=sha256:abc\n\n")
        os.mkdir(os.path.join(d, "dev"))
        with open(os.path.join(d, "dev", "more.txt"), "w") as f:
            f.write("pytest\n")
        self.assertEqual(packages.requirements_file(os.path.join(d, "requirements.txt")),
                         ["six==1.17.0", "pytest", "attrs>=24      ; python_version >= '3.8'", "rich"])
        with open(os.path.join(d, "bad.txt"), "w") as f:
            f.write("six\n-e .\n")
        with self.assertRaisesRegex(ValueError, r"bad.txt:2: -e is not taken by install\(\)"):
            packages.requirements_file(os.path.join(d, "bad.txt"))
        with open(os.path.join(d, "loop.txt"), "w") as f:
            f.write("-r loop.txt\n")
        with self.assertRaisesRegex(ValueError, "in a circle"):
            packages.requirements_file(os.path.join(d, "loop.txt"))


class ProjectRequirementsTest(unittest.TestCase):
    def project(self, text):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "pyproject.toml"), "w") as f:
            f.write(text)
        return d

    def test_dependencies_extras_groups_and_the_project_itself(self):
        try:
            import tomllib  # noqa: F401
        except ImportError:
            with self.assertRaisesRegex(ImportError, 'install\\("tomli"\\) first'):
                packages.project_requirements(self.project("[project]\nname = 'x'\n"))
            return
        d = self.project("""[project]
name = "My_Proj"
dependencies = ["six>=1", "attrs"]
[project.optional-dependencies]
tests = ["pytest", "my-proj[cov]"]
cov = ["coverage"]
[dependency-groups]
lint = ["ruff", {include-group = "types"}]
types = ["mypy"]
""")
        self.assertEqual(packages.project_requirements(d, ["tests", "lint"]),
                         ["six>=1", "attrs", "pytest", "coverage", "ruff", "mypy"])
        self.assertEqual(packages.project_requirements(os.path.join(d, "pyproject.toml")), ["six>=1", "attrs"])
        with self.assertRaisesRegex(ValueError, r"no optional dependencies or dependency group 'docs' \(it has: cov, lint, tests, types\)"):
            packages.project_requirements(d, "docs")
        dynamic = self.project("[project]\nname = 'x'\ndynamic = ['dependencies']\n")
        with self.assertRaisesRegex(ValueError, "dynamic"):
            packages.project_requirements(dynamic)
