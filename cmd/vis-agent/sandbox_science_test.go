package main

import (
	"bytes"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// scienceStack is what a data agent asks install() for; their
// dependencies (patsy, joblib, ...) come with them.
var scienceStack = []string{"numpy", "pandas", "scipy", "scikit-learn", "statsmodels", "matplotlib", "pyarrow", "polars", "pillow", "lxml"}

// TestSandboxScienceStack: in a default (jailed) session on the oldest
// and newest CPython, with the audit hook and without it (the kernel layer
// alone), install() brings the scientific stack from a file:// index of
// the wheelhouse, and each library imports and does a small real job: a
// sparse solve, a grid search whose n_jobs=2 workers are processes of the
// jail (a file outside its roots is refused to them too), an OLS fit
// through a formula, a figure attached without fontconfig's complaint, a
// parquet round trip in the workspace that polars reads back, a group-by,
// a PNG the host decodes, an XML file parsed. After a restart the values
// come back, but lxml's tree, which cannot be pickled, as the notice says.
func TestSandboxScienceStack(t *testing.T) {
	t.Parallel()
	index := "file://" + testwheel.Index(t, testwheel.Wheelhouse(t), t.TempDir())
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte(escapeSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	forHookModes(t, true, func(t *testing.T, py testenv.Python, hook bool) {
		sb := hookSandbox(t, py, hook, "HOME="+t.TempDir())
		writeUserConfig(t, sb, "[python]\nindex_url = \""+index+"\"\n")
		testenv.WriteTree(t, sb.ws, map[string]string{"catalog.xml": `<catalog>
  <book id="1"><title>Rivers</title></book>
  <book id="2"><title>Deltas</title></book>
</catalog>
`})
		args, names := make([]string, len(scienceStack)), []string{"'patsy'", "'joblib'"}
		for i, p := range scienceStack {
			args[i] = strconv.Quote(p)
			names = append(names, "'"+p+"'")
		}
		// A block of the stack says nothing on stderr: a warning or a
		// complaint there is a library meeting the jail.
		quiet := func(code string, extra ...string) result {
			t.Helper()
			r := sb.block("sci", code, 0, extra...)
			if r.stderr != "" {
				t.Errorf("block %q wrote on stderr:\n%s", code, r.stderr)
			}
			return r
		}
		r := quiet("r = install("+strings.Join(args, ", ")+")\nprint(sorted(d.name for d in r.installed))", "--timeout", "3m")
		contains(t, "install() of the stack", r.stdout, names...)

		// scipy's _ccallback calls into ctypes as it imports, which the
		// hook refused ("extension modules cannot be imported"); what
		// ctypes reaches of the machine the kernel layer refuses (libc's
		// open of the file outside the roots).
		r = quiet(`import numpy as np, pandas as pd, scipy.sparse, scipy.sparse.linalg
A = scipy.sparse.diags([4.0, 5.0, 8.0]).tocsc()
print("scipy", scipy.sparse.linalg.spsolve(A, np.array([4.0, 10.0, 16.0])).tolist())
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.open(` + strconv.Quote(outside) + `.encode(), 0)
print("libc open outside", "ESC" + "APED" if fd >= 0 else "refused %d" % ctypes.get_errno())
del libc, fd`)
		contains(t, "numpy and scipy", r.stdout, "scipy [1.0, 2.0, 2.0]", "libc open outside refused 2")
		if escaped(r.stdout + r.stderr) {
			t.Errorf("ctypes reached outside the roots:\n%s%s", r.stdout, r.stderr)
		}

		// The scorers run in the workers: "pid" tells which process fitted
		// each fold, "outside" whether the file outside the roots was
		// refused there.
		r = quiet(`import os
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
def pid(estimator, X, y):
    return os.getpid()
def outside(estimator, X, y):
    try:
        open(`+strconv.Quote(outside)+`).read()
    except OSError:
        return 1.0
    return 0.0
X, y = make_classification(n_samples=200, random_state=0)
scoring = {"accuracy": "accuracy", "pid": pid, "outside": outside}
grid = GridSearchCV(LogisticRegression(max_iter=500), {"C": [0.01, 1.0, 100.0]}, cv=3, n_jobs=2, scoring=scoring, refit="accuracy").fit(X, y)
pids = {int(grid.cv_results_[f"split{i}_test_pid"][j]) for i in range(3) for j in range(3)}
print("grid", sorted(grid.best_params_), grid.best_score_ > 0.8, grid.best_estimator_.coef_.shape)
print("workers", 1 <= len(pids) <= 2 and os.getpid() not in pids)
print("outside refused in the workers", set(grid.cv_results_["mean_test_outside"].tolist()))`, "--timeout", "3m")
		contains(t, "scikit-learn's grid search", r.stdout, "grid ['C'] True (1, 20)", "workers True", "outside refused in the workers {1.0}")

		r = quiet(`import statsmodels.formula.api as smf
x = np.random.default_rng(1).normal(size=100)
frame = pd.DataFrame({"x": x, "y": 3 + 2 * x})
ols = smf.ols("y ~ x", frame).fit()
print("ols", ols.params.round(6).to_dict(), round(ols.rsquared, 6))`)
		contains(t, "statsmodels", r.stdout, "ols {'Intercept': 3.0, 'x': 2.0} 1.0")

		r = sb.block("sci", "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.scatter(frame.x, frame.y)\nplt.show()", 0)
		contains(t, "a matplotlib figure", r.stderr, "[attached figure-", "-1.png version 1: image/png")
		if strings.Contains(r.stderr, "Fontconfig") {
			t.Errorf("fc-list, which matplotlib runs, found no configuration in the jail:\n%s", r.stderr)
		}

		r = quiet(`import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
table = pa.table({"city": ["Lyon", "Oslo", "Lyon"], "n": [1, 2, 3]})
pq.write_table(table, "cities.parquet")
back = pq.read_table("cities.parquet")
print("arrow", back.equals(table), pc.sum(back["n"]).as_py(), back.to_pandas().groupby("city").n.sum().to_dict())`)
		contains(t, "pyarrow", r.stdout, "arrow True 6 {'Lyon': 4, 'Oslo': 2}")
		if data, err := os.ReadFile(filepath.Join(sb.ws, "cities.parquet")); err != nil || !bytes.HasPrefix(data, []byte("PAR1")) {
			t.Errorf("the parquet file in the workspace: %v %q", err, data[:min(len(data), 8)])
		}

		r = quiet(`import polars as pl
sales = pl.read_parquet("cities.parquet").vstack(pl.DataFrame({"city": ["Oslo"], "n": [10]}))
print("polars", sales.group_by("city").agg(pl.col("n").sum()).sort("city").rows(), sales.lazy().filter(pl.col("n") > 1).collect().height)`)
		contains(t, "polars", r.stdout, "polars [('Lyon', 4), ('Oslo', 12)] 3")

		r = quiet(`from PIL import Image, ImageDraw
img = Image.new("RGB", (32, 16), "white")
ImageDraw.Draw(img).rectangle([0, 0, 15, 15], fill="red")
img.save("box.png")
print("pillow", Image.open("box.png").getpixel((1, 1)))`)
		contains(t, "Pillow", r.stdout, "pillow (255, 0, 0)")
		if data, err := os.ReadFile(filepath.Join(sb.ws, "box.png")); err != nil {
			t.Errorf("the image in the workspace: %v", err)
		} else if im, err := png.Decode(bytes.NewReader(data)); err != nil {
			t.Errorf("the image Pillow saved: %v", err)
		} else if red, white := color.RGBAModel.Convert(im.At(1, 1)), color.RGBAModel.Convert(im.At(20, 5)); red != (color.RGBA{255, 0, 0, 255}) || white != (color.RGBA{255, 255, 255, 255}) {
			t.Errorf("the image Pillow saved: %v at (1, 1), %v at (20, 5)", red, white)
		}

		r = quiet(`from lxml import etree
tree = etree.parse("catalog.xml")
print("lxml", tree.xpath("//book[@id='2']/title/text()"), len(tree.getroot()))`)
		contains(t, "lxml", r.stdout, "lxml ['Deltas'] 2")

		sb.ok("restart", "--session", "sci")
		r = quiet(`print("back", back.num_rows, sales.shape, ols.params["x"].round(6), grid.best_estimator_.predict(X[:1]).shape, img.size)`)
		contains(t, "after the restart", r.stdout, "back 3 (4, 2) 2.0 (1,) (32, 16)",
			"Did not come back (1):", "tree: lxml.etree._ElementTree cannot be pickled")
		if escaped(r.stdout + r.stderr) {
			t.Errorf("the secret outside the roots leaked:\n%s%s", r.stdout, r.stderr)
		}
	})
}
