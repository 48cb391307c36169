package repair

import (
	"testing"
	"time"
)

// TestFailsWhenRun checks each kind of code failsWhenRun finds, and code
// of the same look that runs.
func TestFailsWhenRun(t *testing.T) {
	for _, c := range []struct {
		src  string
		want bool
	}{
		{`lf = output.count('\n' - crlf)`, true},
		{`lf = output.count('\n') - crlf`, false},
		{`f(names=["x", "y"](args))`, true},
		{`f(names={"x": 1}(args))`, true},
		{`f(names=["x", "y"])(args)`, false},
		{`x = table[key](args)`, false},
		{`version += kind[0 + str(info.serial)]`, true},
		{`version += kind[0] + str(info.serial)`, false},
		{`n = [0 + str(x).count("a")]`, false},
		{`s = "v" + 1`, true},
		{`s = "2013T00:00"+0000`, true},
		{`line = "-" * 20 + "\n"`, false},
		{`s = "a" + 2 * x`, false},
		{`f.write(str(prev + '\n'))`, true},
		{`f.write(str(prev) + '\n')`, false},
		{`x = np.arange(6, dtype=np.float64[::2])`, true},
		{`x = a.view(np.float64 * b)`, true},
		{`def f(x: np.float64 | None) -> np.float64: pass`, false},
		{`x: npt.NDArray[np.float64] = y`, false},
		{`self = super(Fraction, cls.__new__(cls))`, true},
		{`self = super(type(self), self)`, false},
		{`getattr(g, func(foo=1))`, true},
		{`getattr(g, name.lower())`, false},
		{`getattr(g, str(n))`, false},
		{`X = list(range(n) * 2)`, true},
		{`X = list(range(n)) * 2`, false},
		{`n = min(X.shape - 1)`, true},
		{`shape = X.shape + (1,)`, false},
		{`ns = sys.modules.get(t.__module__.__dict__)`, true},
		{`name = cls.__name__.lower()`, false},
		{`pinv = get_xp(np(_linalg.pinv))`, true},
		{`assert (lx0, ly0, la0 == (-2, 11, 135))`, true},
		{`assert (lx0, ly0, la0) == (-2, 11, 135)`, false},
		{`internalstate = tuple(x % (2 ** 32 for x in internalstate))`, true},
		{`internalstate = tuple(x % (2 ** 32) for x in internalstate)`, false},
		{`d = {name: sum(v.values() for (name, v) in items)}`, true},
		{`d = {name: sum(v.values()) for (name, v) in items}`, false},
		{`xs = [x for x in xs]`, false},
		{`centers = [[1, 1], [-1, -1, [1, -1]]]`, true},
		{`score = f([[0, 0, 0], [[0.25, 0.5, 0.75]]])`, true},
		{`centers = [[1, 1], [-1, -1], [1, -1]]`, false},
		{`rows = [[1, x], [2, [y]]]`, false},
		{`ua = np.array(v, dtype='U%s') % n`, true},
		{`ua = np.array(v, dtype='U%s' % n)`, false},
		{`a = local(t - t)`, true},
		{`a = local(t) - t`, false},
		{`a = t - t2`, false},
		{`end = os.fstat(self._fd.st_size)`, true},
		{`end = os.fstat(self._fd).st_size`, false},
		{`size = info.st_size`, false},
		{`k = RBF(length_scale=1.0(X))`, true},
		{`f(d, rtol=1e-12.check())`, true},
		{`ok = 1.0.is_integer()`, false},
		{`x = f(1.e5, 2)`, false},
		{`Y = rng.random_sample((10, 10).round(0))`, true},
		{`a = np.empty((2, 2).flat)`, true},
		{`n = (1, 2, 1).count(1)`, false},
		{`y = f(x)(2, 2).flat`, false},
		{`O = np.ones((10, 10, t) * 0.1)`, true},
		{`O = np.ones((10, 10) * 2)`, false},
		{`Suffixes = tuple[Optional[str, Optional[str]]]`, true},
		{`Suffixes = tuple[Optional[str], Optional[str]]`, false},
		{`ROOT = Path(np.__file__.parents[0])`, true},
		{`unstack = get_xp(cp(_aliases.unstack))`, true},
	} {
		if got := failsWhenRun(c.src, 0, len(c.src)); got != c.want {
			t.Errorf("failsWhenRun(%s) = %v, want %v", c.src, got, c.want)
		}
	}
}

// TestWrongCount checks that only a tuple of another count than the
// names assigned is refused.
func TestWrongCount(t *testing.T) {
	for _, c := range []struct {
		src, next string
		want      bool
	}{
		{"a, b, x = f(a), f(b, f(x)", "a, b, x = f(a), f(b, f(x))", true},
		{"a, b, x = f(a), f(b, f(x)", "a, b, x = f(a), f(b), f(x)", false},
		{"a, b = f(a, b", "a, b = f(a, b)", false},
		{"a, b = f(a), g(b,", "a, b = f(a), g(b,)", false},
		{"x = f(a), f(b", "x = f(a), f(b)", false},
	} {
		o := len(c.src) - 1
		for c.src[o] != '(' {
			o--
		}
		if got := wrongCount(c.src, o, c.next); got != c.want {
			t.Errorf("wrongCount(%q, %q) = %v, want %v", c.src, c.next, got, c.want)
		}
	}
}

// TestFailsWhenRunBound runs failsWhenRun over a long line of the code it
// reads, none of which fails, to catch a quadratic walk.
func TestFailsWhenRunBound(t *testing.T) {
	src := adversarial()["fails"]
	start := time.Now()
	if failsWhenRun(src, 0, len(src)) {
		t.Fatal("found code that fails in code that runs")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v over %d bytes", d, len(src))
	}
}
