package repair

import (
	"strings"
	"testing"
)

// TestLastField checks what reads as an f-string's field after a closing
// quote's place, and code of the same look that is a display.
func TestLastField(t *testing.T) {
	checkTable(t, "lastField", lastField, []tableCase[string, int]{
		{`, b_ndim={b_ndim})`, 9},
		{`.scale({self._mtx[0, 0]}))`, 7},
		{`{a} and {b}`, 8},
		{`, {1, 2})`, -1},
		{`, {a, b})`, -1},
		{`, {a: 1})`, -1},
		{`, {"a"})`, -1},
		{`{a`, -1},
		{`{`, -1},
		{``, -1},
	})
}

// TestEndsCode checks the text before a quote that reads as code, and
// prose of the same look.
func TestEndsCode(t *testing.T) {
	checkTable(t, "endsCode", endsCode, []tableCase[string, bool]{
		{`b, 16:`, true},
		{`A, -12:`, true},
		{`I if flags & 1 else`, true},
		{`_le or`, true},
		{`yes and`, true},
		{`Error:`, false},
		{`He said, and then:`, false},
		{`this or that or`, false},
		{`or else`, false},
		{`choose one or`, false},
	})
}

// TestUnpackedString checks the strings assigned to several names that
// do not hold as many characters.
func TestUnpackedString(t *testing.T) {
	checkTable(t, "unpackedString", func(src string) bool { return unpackedString(src) >= 0 }, []tableCase[string, bool]{
		{"trim, unique = '0, True'\n", true},
		{"a, b = 'xyz'\n", true},
		{"a, b = 'xy'\n", false},
		{"a, b, c = \"xyz\"  \n", false},
		{"a = 'xyz'\n", false},
		{"a, b = f('xyz')\n", false},
		{"a, b = 'x\\ny'\n", false},
		{"a.x, b = 'xyz'\n", false},
		{"x = 1\na, b = 'xyz'\n", true},
	})
}

// TestFirstAssignment checks the assignment statements a bracket's closer
// must not take in, and keyword arguments of the same look.
func TestFirstAssignment(t *testing.T) {
	checkTable(t, "firstAssignment", func(src string) bool { return firstAssignment(src, strings.IndexByte(src, '(')) >= 0 }, []tableCase[string, bool]{
		{"alpha = cs.get_alpha(\nboundaries = cs._levels\n", true},
		{"    ha = f(\n    va = g()\n", true},
		{"x = dict(\n    a = 1,\n", false},
		{"x = f(\n    a=1,\n", false},
		{"x = f(\"\"\"\na = b\n\"\"\"\n", false},
		{"x = f(  # a = b\ny\n", false},
		{"x = f(\nif a == b:\n", false},
	})
}

// TestSwappedQuote checks which quote of the other kind ended a string
// that runs to its line's end.
func TestSwappedQuote(t *testing.T) {
	checkTable(t, "swappedQuote", func(src string) int {
		i := strings.IndexAny(src, `'"`)
		start := i
		for start > 0 && isIdentChar(src[start-1]) {
			start--
		}
		return swappedQuote(src, (&scanner{src: src}).newLit(start, i), len(src))
	}, []tableCase[string, int]{
		{`quotechar = '""`, 14},
		{`x = '""""`, 8},
		{`message = r"The balance properties of Sobol''`, 44},
		{`cppmacros['CFUNCSMESS"] = """`, 21},
		{`assert_equal(fpos(tp('1.0"), unique=False), "1.0000")`, 25},
		{`raise SkipTest("can't find the free version')`, -1},
		{`print("m, end=' ')`, -1},
		{`x = '"`, -1},
		{`print("hello')`, 12},
	})
}

// tableCase is a row of a table test: the input and the result wanted.
type tableCase[I, W any] struct {
	in   I
	want W
}

// checkTable runs the table test of the function f, named name.
func checkTable[I any, W comparable](t *testing.T, name string, f func(I) W, cases []tableCase[I, W]) {
	t.Helper()
	for _, c := range cases {
		if got := f(c.in); got != c.want {
			t.Errorf("%s(%#v) = %v, want %v", name, c.in, got, c.want)
		}
	}
}

// TestWrapsLastArgument checks the calls a closer would end with an
// argument wrapped whole in a group just closed, and those written so.
func TestWrapsLastArgument(t *testing.T) {
	checkTable(t, "wrapsLastArgument", func(src string) bool {
		return wrapsLastArgument(src, strings.IndexByte(src, '('), len(src))
	}, []tableCase[string, bool]{
		{`emit((group-1*2+1)`, true},
		{`svd((B.T @ np.conjugate(A).T)`, true},
		{`f(a, (b + c)`, true},
		{`np.zeros((10)`, false},
		{`np.zeros((self.n)`, false},
		{`np.sum((l * (n - l)), axis=-1`, false},
		{`max((a, b)`, false},
		{`sum((x for x in xs)`, false},
		{`f((yield)`, false},
		{`f((n := 10)`, false},
		{`f((a) + (b)`, false},
		{`x = ((a + b)`, false},
	})
}
