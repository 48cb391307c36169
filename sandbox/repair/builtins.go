package repair

import "strings"

// signature is what a builtin accepts: between min and max positional
// arguments (max < 0: any number) and the keyword arguments kw ("*":
// any).
type signature struct {
	min, max int
	kw       []string
}

// signatures of builtins a closer placed wrongly often gives the wrong
// arguments, as in max(len(a)), len(b) or range(1, 3, closed=c).
var signatures = map[string]signature{
	"globals": {0, 0, nil}, "locals": {0, 0, nil},
	"abs": {1, 1, nil}, "len": {1, 1, nil}, "ord": {1, 1, nil}, "chr": {1, 1, nil},
	"repr": {1, 1, nil}, "id": {1, 1, nil}, "hash": {1, 1, nil}, "callable": {1, 1, nil},
	"reversed": {1, 1, nil}, "any": {1, 1, nil}, "all": {1, 1, nil},
	"range": {1, 3, nil}, "list": {0, 1, nil}, "tuple": {0, 1, nil}, "set": {0, 1, nil},
	"frozenset": {0, 1, nil}, "dict": {0, 1, []string{"*"}}, "float": {0, 1, nil}, "bool": {0, 1, nil},
	"int": {0, 2, []string{"base"}}, "str": {0, 3, []string{"encoding", "errors"}},
	"sorted": {1, 1, []string{"key", "reverse"}}, "enumerate": {1, 2, []string{"start"}},
	"zip": {0, -1, []string{"strict"}}, "sum": {1, 2, []string{"start"}},
	"isinstance": {2, 2, nil}, "issubclass": {2, 2, nil}, "hasattr": {2, 2, nil},
	"getattr": {2, 3, nil}, "setattr": {3, 3, nil}, "divmod": {2, 2, nil},
	"pow": {2, 3, nil}, "round": {1, 2, []string{"ndigits"}}, "iter": {1, 2, nil},
	"next": {1, 2, nil}, "max": {1, -1, []string{"key", "default"}}, "min": {1, -1, []string{"key", "default"}},
	// io's in-memory files, as in read_csv(StringIO(data), sep=";").
	"StringIO": {0, 2, []string{"initial_value", "newline"}}, "BytesIO": {0, 1, []string{"initial_bytes"}},
}

// methods are methods of lists and sets that take one item, as
// parts.append(x): whatever the object, two items are a closer misplaced,
// as in out.append(f(x, y) read as out.append(f(x), y). Keyword
// arguments are left to the object's own method. Also sys.exc_info,
// which takes nothing: sys.exc_info([1] is sys.exc_info()[1].
var methods = map[string]signature{
	"append": {1, 1, []string{"*"}}, "extend": {1, 1, []string{"*"}},
	"remove": {1, 1, []string{"*"}}, "discard": {1, 1, []string{"*"}},
	"exc_info": {0, 0, nil},
}

// assertions are the assertions of numpy.testing, pandas' testing and
// unittest that compare two values: given one, the call fails whatever
// the value, as assert_allclose(expit(-n, 0.0, atol=1e-20) read as
// assert_allclose(expit(-n, 0.0, atol=1e-20)) does. Either value may come
// by keyword, as in assert_equal(actual=a, desired=b).
var assertions = setOf("assert_equal", "assert_allclose", "assert_array_equal", "assert_almost_equal",
	"assert_array_almost_equal", "assert_approx_equal", "assert_array_less", "assert_string_equal",
	"assert_frame_equal", "assert_series_equal", "assert_index_equal", "assert_numpy_array_equal",
	"assert_extension_array_equal", "assert_dict_equal",
	"assertEqual", "assertNotEqual", "assertAlmostEqual", "assertNotAlmostEqual", "assertIs", "assertIsNot",
	"assertIn", "assertNotIn", "assertIsInstance", "assertNotIsInstance", "assertGreater", "assertGreaterEqual",
	"assertLess", "assertLessEqual", "assertRegex", "assertNotRegex", "assertCountEqual", "assertListEqual",
	"assertTupleEqual", "assertSetEqual", "assertDictEqual", "assertSequenceEqual", "assertMultiLineEqual")

// comparedKeywords are the keywords that give a compared value.
var comparedKeywords = []string{"actual", "desired", "expected", "result", "left", "right", "first", "second",
	"x", "y", "a", "b", "member", "container", "obj", "cls", "text", "expected_regex", "unexpected_regex"}

// comparisonSignature is what a comparison accepts: two values, positional
// or by keyword (comparedKeywords), and its options.
var comparisonSignature = signature{2, -1, []string{"*"}}

// arrayFuncs are functions of the array libraries (numpy and its
// look-alikes, see arrayModules) that a closer lost inside a line and put
// back at its end gives a keyword of the outer call, as in
// Series(np.arange(4.0, index=index) or
// assert_equal(a, xp.asarray(b, dtype=t, check_dtype=False).
// No minimum: a keyword may give the first argument, as in
// np.zeros(shape=n).
var arrayFuncs = map[string]signature{
	"arange":  {0, 4, []string{"start", "stop", "step", "dtype", "device", "like"}},
	"asarray": {0, 3, []string{"a", "dtype", "order", "device", "copy", "like"}},
	"array":   {0, 2, []string{"object", "dtype", "copy", "order", "subok", "ndmin", "like"}},
	"zeros":   {0, 3, []string{"shape", "dtype", "order", "device", "like"}},
	"ones":    {0, 3, []string{"shape", "dtype", "order", "device", "like"}},
	"empty":   {0, 3, []string{"shape", "dtype", "order", "device", "like"}},
	"full":    {0, 4, []string{"shape", "fill_value", "dtype", "order", "device", "like"}},
	"eye":     {0, 3, []string{"N", "M", "k", "dtype", "order", "device", "like"}},
	// The joins of arrays, as in Data(np.vstack((x1, x2)), y=1).
	"vstack":       {0, 1, []string{"tup", "dtype", "casting"}},
	"hstack":       {0, 1, []string{"tup", "dtype", "casting"}},
	"column_stack": {0, 1, []string{"tup"}},
	"stack":        {0, 3, []string{"arrays", "axis", "out", "dtype", "casting"}},
	"concatenate":  {0, 3, []string{"arrays", "axis", "out", "dtype", "casting"}},
	// Reductions, as in assert_(np.all(d <= 0), msg=m), which take no message.
	"all":  {0, 3, []string{"a", "axis", "out", "keepdims", "where"}},
	"any":  {0, 3, []string{"a", "axis", "out", "keepdims", "where"}},
	"sum":  {0, 4, []string{"a", "axis", "dtype", "out", "keepdims", "initial", "where"}},
	"mean": {0, 4, []string{"a", "axis", "dtype", "out", "keepdims", "where"}},
}

// moduleFuncs are functions of other modules, called through their
// module's name, as textwrap.dedent(code), pattern=p read as
// textwrap.dedent(code, pattern=p) would not be.
var moduleFuncs = map[string]signature{
	"pytz.timezone":   {0, 1, []string{"zone"}}, // a zone name, nothing else
	"textwrap.dedent": {1, 1, nil},
	"textwrap.indent": {2, 3, []string{"predicate"}},
}

// moduleFuncNames are the names of moduleFuncs, without their module,
// which a call's name is checked against first.
var moduleFuncNames = func() map[string]bool {
	names := map[string]bool{}
	for qualified := range moduleFuncs {
		names[qualified[strings.LastIndexByte(qualified, '.')+1:]] = true
	}
	return names
}()

// unaryUfuncs are numpy's functions of one array, element by element,
// which take an output array and the keywords of every ufunc besides, as
// in np.log(cdf), not np.log(cdf, logcdf, decimal=7).
var unaryUfuncs = setOf("abs", "log", "log2", "log10", "log1p", "exp", "exp2", "expm1", "sqrt", "cbrt",
	"sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
	"arctanh", "absolute", "fabs", "floor", "ceil", "trunc", "rint", "sign", "negative", "square",
	"reciprocal", "isnan", "isinf", "isfinite", "deg2rad", "rad2deg", "degrees", "radians")

// ufuncSignature is what a unary ufunc accepts.
var ufuncSignature = signature{0, 2, []string{"x", "out", "where", "casting", "order", "dtype", "subok", "signature"}}

// arrayModules are the names code imports the array libraries as (xp is
// the array API namespace of scipy and scikit-learn).
var arrayModules = setOf("np", "numpy", "xp", "cp", "jnp")

// arrayFunc returns the signature of the function name called as an
// attribute of the module word ending at s-1 in src (the dot at s-1), if
// it is one of moduleFuncs, or of arrayFuncs or unaryUfuncs called
// through one of arrayModules.
func arrayFunc(src string, s int, name string) (signature, bool) {
	m := s - 1
	for m > 0 && isIdentChar(src[m-1]) {
		m--
	}
	mod := src[m : s-1]
	if m > 0 && src[m-1] == '.' {
		return signature{}, false
	}
	if sig, ok := moduleFuncs[mod+"."+name]; ok {
		return sig, true
	}
	if !arrayModules[mod] {
		return signature{}, false
	}
	if unaryUfuncs[name] {
		return ufuncSignature, true
	}
	sig, ok := arrayFuncs[name]
	return sig, ok
}

// frameKeywords are keywords of pandas' constructors that no numpy
// function takes, as in DataFrame(rng.standard_normal((3, 4), columns=c).
var frameKeywords = setOf("index", "columns")

// foreignToNumpy reports whether no numpy function called name takes the
// keyword kw: one of frameKeywords, or an absolute tolerance, which only
// the comparisons (isclose, allclose, assert_allclose) take, as in
// assert_allclose(fft1(x), np.fft.fft(x, atol=1e-6).
func foreignToNumpy(name, kw string) bool {
	return frameKeywords[kw] || kw == "atol" && !strings.Contains(name, "close")
}

// numpyChain reports whether the call whose bracket is at o is reached
// from numpy's module, as np.random.default_rng(2).standard_normal( is,
// looking back a bounded number of bytes (a line of calls stays linear).
func numpyChain(src string, o int) bool {
	i, from := o, max(0, o-120)
	for i > from {
		switch c := src[i-1]; {
		case isIdentChar(c) || c == '.':
			i--
		case c == ')':
			m := matchingOpener(src[from:i], i-1-from)
			if m < 0 {
				return false
			}
			i = from + m
		default:
			return strings.HasPrefix(src[i:o], "np.") || strings.HasPrefix(src[i:o], "numpy.")
		}
	}
	return i == 0 && (strings.HasPrefix(src[:o], "np.") || strings.HasPrefix(src[:o], "numpy."))
}

// scalars are builtins that return a number, which max and min cannot
// take alone.
var scalars = setOf("abs", "len", "int", "float", "ord", "round", "sum")

// misusesBuiltin reports whether the call whose bracket is at opener in
// src calls a builtin the block does not redefine, or one of methods,
// with arguments it does not accept. Unpacked arguments (*args, **kw)
// accept anything.
func misusesBuiltin(src string, opener int) bool {
	if src[opener] != '(' {
		return false
	}
	name := calleeName(src, opener)
	s := opener - len(name)
	sig, ok := signatures[name]
	if s > 0 && src[s-1] == '.' {
		if sig, ok = methods[name]; !ok {
			sig, ok = arrayFunc(src, s, name)
		}
	} else if redefines(src, name) {
		return false
	}
	if !ok && assertions[name] {
		sig, ok = comparisonSignature, true
	}
	if !ok {
		return false
	}
	args, ok := callArgs(src, opener)
	if !ok {
		return false
	}
	pos := 0
	for _, a := range args {
		switch k := wordEnd(a, 0); {
		case strings.HasPrefix(a, "*"):
			return false
		case k > 0 && k < len(a) && a[k] == '=' && (k+1 == len(a) || a[k+1] != '='):
			if !containsString(sig.kw, a[:k]) && !containsString(sig.kw, "*") {
				return true
			}
			if assertions[name] && containsString(comparedKeywords, a[:k]) {
				pos++
			}
		default:
			pos++
		}
	}
	if pos < sig.min || sig.max >= 0 && pos > sig.max {
		return true
	}
	if name == "full" && pos < 2 && !keywordIn(args, "fill_value") {
		return true // a shape with no value to fill it, as np.full((40, 50, np.nan))
	}
	if name == "arange" && pos == 1 && literalRatio(args[0]) {
		return true // a bound written as a ratio of literals, as np.arange(5/4) for np.arange(5)/4
	}
	if iterables[name] {
		for _, a := range args {
			if boundDunder(a) {
				return true
			}
		}
	}
	if (name == "max" || name == "min") && pos == 1 {
		a := args[0]
		k := wordEnd(a, 0)
		return isDigit(a[0]) || k > 0 && k < len(a) && a[k] == '(' && scalars[a[:k]]
	}
	return false
}

// keywordIn reports whether args, a call's arguments, give the keyword
// kw.
func keywordIn(args []string, kw string) bool {
	for _, a := range args {
		if k := wordEnd(a, 0); a[:k] == kw && k < len(a) && a[k] == '=' && (k+1 == len(a) || a[k+1] != '=') {
			return true
		}
	}
	return false
}

// literalRatio reports whether a is one number literal divided by
// another, as 5/4.
func literalRatio(a string) bool {
	a = strings.ReplaceAll(a, " ", "")
	k := strings.IndexByte(a, '/')
	return k > 0 && k+1 < len(a) && isDigit(a[0]) && numberEnd(a, 0) == k && isDigit(a[k+1]) && numberEnd(a, k+1) == len(a)
}

// iterables are builtins that iterate over their arguments.
var iterables = setOf("list", "tuple", "set", "frozenset", "sorted", "iter", "any", "all",
	"sum", "enumerate", "reversed", "zip", "max", "min")

// dunderMethods are special methods, which code calls or passes on but
// never iterates over.
var dunderMethods = setOf("__contains__", "__next__", "__iter__", "__getitem__", "__call__",
	"__len__", "__new__", "__init__", "__eq__", "__hash__", "__enter__", "__exit__")

// boundDunder reports whether the argument a ends with a special method
// taken but not called, as softkwlist.__contains__ does in
// frozenset(softkwlist.__contains__), where frozenset(softkwlist).__contains__
// was meant.
func boundDunder(a string) bool {
	k := strings.LastIndexByte(a, '.')
	return k > 0 && dunderMethods[a[k+1:]]
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// redefines reports whether src defines name itself, as a function, a
// class, or by assignment or import (global_dict = or self.dict = do
// not redefine dict).
func redefines(src, name string) bool {
	return definesAs(src, "def ", name, "(") || definesAs(src, "class ", name, "") ||
		definesAs(src, "", name, " = ") || definesAs(src, "import ", name, "") || definesAs(src, " as ", name, "")
}

// definesAs reports whether src holds before+name+after with name a
// whole name: no name character or dot right before it, no name
// character right after it.
func definesAs(src, before, name, after string) bool {
	pat := before + name + after
	for i := 0; ; {
		k := strings.Index(src[i:], pat)
		if k < 0 {
			return false
		}
		s, e := i+k+len(before), i+k+len(before)+len(name)
		if (s == 0 || !isIdentChar(src[s-1]) && src[s-1] != '.') && (e == len(src) || !isIdentChar(src[e])) {
			return true
		}
		i += k + 1
	}
}

// callArgs returns the arguments of the call whose bracket is at opener,
// each trimmed, or false when the bracket does not close.
func callArgs(src string, opener int) ([]string, bool) {
	args, end := argsUpTo(src, opener)
	return args, end >= 0
}

// argsUpTo returns the arguments of the bracket at opener, as callArgs
// does, and the offset of its closer, or -1 when it has none.
func argsUpTo(src string, opener int) ([]string, int) {
	args, end := splitItems(src, opener+1, false)
	if n := len(args); n > 0 && args[n-1] == "" {
		args = args[:n-1] // nothing after the last comma, or no argument
	}
	return args, end
}

// splitItems returns the items of src from i on, split at the commas
// outside brackets, strings and comments, each trimmed, up to the closer
// of the bracket i is in, whose offset is end (-1 when it has none), or,
// with lineEnd, up to the end of the logical line (end: the newline's
// offset or len(src)).
func splitItems(src string, i int, lineEnd bool) (items []string, end int) {
	depth, start := 0, i
	for k := i; k < len(src); k++ {
		switch c := src[k]; {
		case isQuote(c):
			k = skipString(src, k, len(src)) - 1
		case c == '#':
			k = lineEndFrom(src, k) - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth == 0 && !lineEnd {
				return append(items, strings.TrimSpace(src[start:k])), k
			}
			depth--
		case c == ',' && depth == 0:
			items = append(items, strings.TrimSpace(src[start:k]))
			start = k + 1
		case c == '\n' && lineEnd && depth <= 0:
			return append(items, strings.TrimSpace(src[start:k])), k
		}
	}
	if lineEnd {
		return append(items, strings.TrimSpace(src[start:])), len(src)
	}
	return nil, -1
}

// strMethods are the methods of str, the only ones a string literal has.
var strMethods = setOf("capitalize", "casefold", "center", "count", "encode", "endswith",
	"expandtabs", "find", "format", "format_map", "index", "isalnum", "isalpha", "isascii",
	"isdecimal", "isdigit", "isidentifier", "islower", "isnumeric", "isprintable", "isspace",
	"istitle", "isupper", "join", "ljust", "lower", "lstrip", "maketrans", "partition",
	"removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition",
	"rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title",
	"translate", "upper", "zfill", "decode", "hex", "fromhex")

// misusesLiteral reports whether the code src[from:to] subscripts, takes
// an attribute of or does arithmetic on True, False or None, as in
// full_output=True[1] after a closer was lost before [1] or
// dense=True + bias after one was lost before +, subscripts a number, puts a sign
// on a string, starts an argument with a binary operator, or calls on a
// string literal a method strings do not have, as in ar['need'.append(t).
// Also code that fails when run or that nobody writes, which a closer
// lost inside a line leaves when put back at the line's end: arithmetic
// on np.newaxis (None), a subscript of a type that takes none, as
// float[()], a call given a generator of its own loop variable, as
// f(x for x in xs), the type of a dunder, as type(x.__name__), a string
// indexed by a string, arithmetic in a dtype= argument, or a number added
// inside len(), as len(d + 1).
func misusesLiteral(src string, from, to int) bool {
	scans := 0 // scans of the block or of a call's arguments, bounded as in misusedBuiltinNear
	for k := from; k < to; k++ {
		switch c := src[k]; {
		case strings.IndexByte("([,", c) >= 0 && binaryAfter(src[k+1:to]):
			return true // an operand missing, as in time( + timeout)
		case isQuote(c):
			if unaryBefore(src, from, k) {
				return true // a sign on a string, as in rstrip( + "\n")
			}
			e := skipString(src, k, to)
			if e < to && e > k+1 && src[e-1] == c && src[e] == '.' {
				// called or not, as in re.compile(r'\s*'.match)
				if m := wordEnd(src, e+1); m > e+1 && m < to && !strMethods[src[e+1:m]] && !strings.HasPrefix(src[e+1:m], "__") {
					return true
				}
			}
			if e < to && e > k+1 && src[e-1] == c && src[e] == '.' && (k == 0 || !isIdentChar(src[k-1])) && noOpMethod(src[k+1:e-1], src[e+1:to]) {
				return true // a literal that is its own result, as in decode("ascii".strip()
			}
			if e < to && e > k+1 && src[e-1] == c && bytesPrefix(src, k) && strings.HasPrefix(src[e:to], ".decode(") && !strings.ContainsAny(src[k+1:e-1], "\\\n\"'") {
				return true // text written as bytes to be decoded, as in rstrip(b'='.decode('ascii')
			}
			if e == k+2 && src[e-1] == c && strings.HasPrefix(strings.TrimLeft(src[e:to], " "), "*") && !strings.HasPrefix(strings.TrimLeft(src[e:to], " "), "**") {
				return true // an empty string repeated, as in ['' * rows] for [''] * rows
			}
			if e+1 < to && e > k+1 && src[e-1] == c && src[e] == '[' && isQuote(src[e+1]) {
				return true // a string indexed by a string, as in groupby("A"["C"]
			}
			if e < to && e == k+3 && src[e-1] == c && src[e] == '[' && (k == 0 || !isIdentChar(src[k-1])) {
				return true // a one-character string subscripted, as in split('.'[-1])
			}
			if e < to && e == k+3 && src[e-1] == c && src[k+1] == ')' && src[e] == ')' && addedBefore(src, from, k) && strings.Contains(src[from:k], string(c)+"("+string(c)) {
				// the text's closer added inside the call its opener
				// is added before, as in '(' + f(n.iffalse + ')'), not
				// '(' + f(n.iffalse) + ')'
				return true
			}
			k = e - 1
		case c == '#':
			k = lineEndFrom(src, k) - 1
		case c == '(' && k+1 < to && src[k+1] == '(' && loneNameParens(src[k+1:to]):
			return true // a name in two parentheses, as in dispatch((tri)) for dispatch()(tri)
		case c == '[' && scans < maxCallsChecked && argumentStart(src, from, k):
			scans++
			if _, m := argsUpTo(src, k); m >= 0 && m+1 < to && src[m+1] == '.' {
				if w := src[m+2 : wordEnd(src, m+2)]; w != "" && !listMethods[w] && !strings.HasPrefix(w, "__") {
					return true // a list has no such method, as in np.array([[1, 2], [3, 4]].view(cls)
				}
			}
		case isIdentStart(c):
			e := wordEnd(src, k)
			if src[k:e] == "dtype" && e+1 < to && src[e] == '=' && src[e+1] != '=' && scans < maxCallsChecked {
				if scans++; arithmeticInArg(src, e+1, to) || arrayMethodInArg(src, e+1, to) {
					return true // a type is no number nor array, as in dtype=np.float32*2 or dtype=np.intp.cumsum()
				}
			}
			w, attr := src[k:e], k > 0 && src[k-1] == '.'
			if !attr && operandKeywords[w] && e < to && (src[e] == '[' || src[e] == '.' || arithmeticAfter(src[e:to])) {
				return true
			}
			if !attr && strings.HasPrefix(w, "n_") && strings.HasPrefix(src[e:to], ".astype(") {
				return true // a count is an int, which has no astype: rand(n, n_features).astype(t)
			}
			if attr && w == "newaxis" && arithmeticAfter(src[e:to]) {
				return true // np.newaxis is None: y[:, np.newaxis - z]
			}
			if !attr && scalarTypes[w] && e < to && src[e] == '[' && scans < maxCallsChecked {
				if scans++; !redefines(src, w) {
					return true // a type that takes no subscript, as float[()]
				}
			}
			if !attr && w == "len" && e < to && src[e] == '(' && scans < maxCallsChecked {
				if scans++; lengthOfSum(src, e) {
					return true
				}
			}
			if !attr && w == "type" && e < to && src[e] == '(' && scans < maxCallsChecked {
				if scans++; typeOfDunder(src, e) {
					return true
				}
			}
			if (w == "Union" || w == "Optional") && e < to && src[e] == '[' && scans < maxCallsChecked {
				if args, ok := callArgs(src, e); ok && containsString(args, "...") {
					return true // an ellipsis is an item of Tuple[int, ...], not of Union[int, ...]
				}
				scans++
			}
			if !attr && w == "getattr" && e < to && src[e] == '(' && scans < maxCallsChecked {
				if args, ok := callArgs(src, e); ok && len(args) > 1 && strings.HasSuffix(args[1], ".__doc__") {
					return true // a docstring is no attribute's name: getattr(self, 'do_' + arg).__doc__
				}
				scans++
			}
			if attr && w == "group" && e < to && src[e] == '(' && scans < maxCallsChecked {
				if args, ok := callArgs(src, e); ok && groupOfGroup(src, k, args) {
					return true // a group's text as a group's number, as in m.group(2, m.group(5)
				}
				scans++
			}
			if attr && w == "join" && e < to && src[e] == '(' && scans < maxCallsChecked {
				if args, ok := callArgs(src, e); ok && len(args) == 1 && endsAddingString(args[0]) {
					return true // the items joined end with a string added, as in "|".join(items + "|")
				}
				scans++
			}
			if !attr && w == "__file__" && e < to && (src[e] == '[' || src[e] == '.' && !strMethods[src[e+1:wordEnd(src, e+1)]]) {
				return true // a path's text, subscripted or given a Path's attribute, as in Path(__file__.parent)
			}
			if bytesOnly[w] && e < to && src[e] == '(' && scans < maxCallsChecked {
				if args, ok := callArgs(src, e); ok && len(args) == 1 && (strings.HasSuffix(args[0], ".decode()") || strings.HasSuffix(args[0], ".hexdigest()")) {
					return true // a str given where bytes go, as b64encode(s.decode()), not b64encode(s).decode()
				}
				scans++
			}
			if attr && mutators[w] && e < to && src[e] == '(' && usedAsValue(src, from, k-1) {
				return true // what list.extend returns (None) taken, as in out[key.extend(v)] for out[key].extend(v)
			}
			if attr && w == "files" && strings.HasSuffix(src[from:k], "resources.") && e < to && src[e] == '(' && scans < maxCallsChecked {
				if args, ok := callArgs(src, e); ok && len(args) == 1 && (strings.Contains(args[0], ".joinpath(") || strings.Contains(args[0], " / ")) {
					return true // a package is no path: importlib.resources.files(pkg).joinpath(name), not files(pkg.joinpath(name))
				}
				scans++
			}
			if attr && strings.HasPrefix(w, "set_") && !returnsSelf[w] && e < to && src[e] == '(' && subscriptKey(src, from, k-1) {
				return true // a setter's None as a key, as in axes[i.set_visible(True)] for axes[i].set_visible(True)
			}
			if attr && elementTests[w] && e < to && src[e] == '(' && scans < maxCallsChecked {
				if args, ok := callArgs(src, e); ok && len(args) == 1 && (strings.HasSuffix(args[0], ".all()") || strings.HasSuffix(args[0], ".any()")) {
					return true // a test of each element of one bool, as np.isfinite(x.all()), not np.isfinite(x).all()
				}
				scans++
			}
			if attr && (w == "iinfo" || w == "finfo") && e < to && src[e] == '(' && scans < maxCallsChecked {
				if args, ok := callArgs(src, e); ok && len(args) == 1 && limitAttr(args[0]) {
					return true // a limit of the result, as np.iinfo(np.int32).max, not of the type
				}
				scans++
			}
			if e < to && src[e] == '(' && !keywords[w] && scans < maxCallsChecked && identityStart(src, e) {
				scans++
				if identityGenerator(src, e) {
					return true
				}
			}
			k = max(e, k+1) - 1
		case isDigit(c) && (k == 0 || !isIdentChar(src[k-1]) && src[k-1] != '.'):
			e := numberEnd(src, k)
			if e < to && src[e] == '[' {
				return true // a number subscripted, as 0[1] in m.regs[0[1]
			}
			if e == k+1 && src[k] == '0' && strings.HasPrefix(strings.TrimLeft(src[e:to], " "), "+ ") && argumentStart(src, from, k) {
				return true // an argument adding to zero, as axis=0 + (1 << 12)
			}
			k = e - 1
		}
	}
	return false
}

// loneNameParens reports whether text starts with a name or attribute in
// parentheses, followed by a closing parenthesis.
func loneNameParens(text string) bool {
	if len(text) < 2 || !isIdentStart(text[1]) {
		return false
	}
	k := 1
	for k < len(text) && (isIdentChar(text[k]) || text[k] == '.') {
		k++
	}
	return k > 1 && strings.HasPrefix(text[k:], "))")
}

// listMethods are the methods of a list.
var listMethods = setOf("append", "extend", "insert", "remove", "pop", "clear", "index", "count", "sort", "reverse", "copy")

// argumentStart reports whether src[k] starts an argument, an item or a
// value assigned (after an opening parenthesis, a comma or an =), as the
// bracket of a list display does, not a subscript's.
func argumentStart(src string, from, k int) bool {
	j := nonSpaceBefore(src, from, k)
	return j >= from && strings.IndexByte("(,=", src[j]) >= 0
}

// nonSpaceBefore is the offset of the last byte before k in src, from from
// on, that is not a space (from-1 if none is).
func nonSpaceBefore(src string, from, k int) int {
	j := k - 1
	for j >= from && src[j] == ' ' {
		j--
	}
	return j
}

// groupOfGroup reports whether the arguments args of the .group( call
// whose name starts at k in src hold a call of group on the same match,
// as m.group(2, m.group(5)) does: a match's groups are numbered or named
// in the pattern, never by the text of another group.
func groupOfGroup(src string, k int, args []string) bool {
	m := k - 1
	for m > 0 && isIdentChar(src[m-1]) {
		m--
	}
	if m == k-1 {
		return false
	}
	for _, a := range args {
		if strings.HasPrefix(a, src[m:k]+"group(") {
			return true
		}
	}
	return false
}

// endsAddingString reports whether the expression a ends by adding a
// plain string literal, as items + "|" does: joining that iterates over
// its characters or fails.
func endsAddingString(a string) bool {
	plus, str, depth := -1, -1, 0
	for k := 0; k < len(a); k++ {
		switch c := a[k]; {
		case isQuote(c):
			str = k
			k = skipString(a, k, len(a)) - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == '+' && depth == 0:
			plus = k
		}
	}
	return plus >= 0 && str > plus && strings.TrimSpace(a[plus+1:str]) == "" && skipString(a, str, len(a)) == len(a)
}

// bytesPrefix reports whether the string literal whose quote is at k in
// src is a plain bytes literal, b'...' (not raw).
func bytesPrefix(src string, k int) bool {
	return k > 0 && (src[k-1] == 'b' || src[k-1] == 'B') && (k == 1 || !isIdentChar(src[k-2]))
}

// noOpMethod reports whether the method call starting rest, on a string
// literal of text text (no escapes, one line), returns the literal
// itself: strip() of text without outer spaces, lower() of text without
// capitals, upper() of text without small letters. Nobody writes those,
// while a closer lost before them, as in decode("ascii").strip(), leaves
// them.
func noOpMethod(text, rest string) bool {
	if strings.ContainsAny(text, "\\\n\"'") || text == "" {
		return false
	}
	switch {
	case strings.HasPrefix(rest, "strip()"), strings.HasPrefix(rest, "lstrip()"), strings.HasPrefix(rest, "rstrip()"):
		return strings.TrimSpace(text) == text
	case strings.HasPrefix(rest, "lower()"):
		return strings.ToLower(text) == text
	case strings.HasPrefix(rest, "upper()"):
		return strings.ToUpper(text) == text
	}
	return false
}

// mutators are the methods of lists, sets and dicts that change their
// object and return None, which code calls for that, never for a value
// (not insert and add, which pandas' objects answer with a new one).
var mutators = setOf("append", "extend", "remove", "sort", "reverse", "discard", "update", "clear")

// usedAsValue reports whether the receiver of the method whose dot is at
// dot in src, a chain of names, calls and subscripts, is an argument, an
// item, a subscript or a keyword's value: it follows an opening bracket, a
// comma or a keyword argument's =, from from on.
func usedAsValue(src string, from, dot int) bool {
	if moduleFunc(src, from, dot) {
		return false
	}
	i := receiverStart(src, from, dot)
	if i <= from {
		return false
	}
	j := nonSpaceBefore(src, from, i)
	if j < from || strings.IndexByte("([,", src[j]) < 0 && !(src[j] == '=' && j > from && isIdentChar(src[j-1])) {
		return false
	}
	// A comprehension of calls, as [out.append(x) for x in xs], is
	// written for them.
	return !strings.Contains(src[i:lineEndFrom(src, i)], " for ")
}

// receiverStart returns where the receiver of the method whose dot is at
// dot in src starts, a chain of names, calls and subscripts read back to
// from at most; from when it reaches it or a bracket does not match.
func receiverStart(src string, from, dot int) int {
	i := dot
	for i > from {
		switch c := src[i-1]; {
		case isIdentChar(c) || c == '.':
			i--
		case c == ')' || c == ']':
			m := matchingOpener(src[from:i], i-1-from)
			if m < 0 {
				return from
			}
			i = from + m
		default:
			return i
		}
	}
	return from
}

// subscriptKey reports whether the receiver of the method whose dot is at
// dot in src is the whole start of a subscript's key, as i is in
// axes[i.set_visible(True)].
func subscriptKey(src string, from, dot int) bool {
	i := receiverStart(src, from, dot)
	return i > from+1 && src[i-1] == '[' && (isIdentChar(src[i-2]) || src[i-2] == ')' || src[i-2] == ']')
}

// returnsSelf are setters that return their object (scikit-learn's) or a
// new one (pandas'), which a subscript may take; other set_ methods, as
// matplotlib's, return None.
var returnsSelf = setOf("set_params", "set_output", "set_index", "set_axis", "set_names", "set_levels", "set_codes",
	"set_categories", "set_flags", "set_ordered", "set_closed")

// functionModules are modules with functions named as mutators, as
// np.sort(x), operator.add(a, b) or np.strings.add(a, b), which return
// their result.
var functionModules = setOf("np", "numpy", "xp", "cp", "jnp", "torch", "tf", "operator", "math", "pd")

// moduleFunc reports whether the name before the dot at dot in src, from
// from on, is reached from one of functionModules (as np.strings is).
func moduleFunc(src string, from, dot int) bool {
	i := dot
	for i > from && (isIdentChar(src[i-1]) || src[i-1] == '.') {
		i--
	}
	first := src[i:wordEnd(src, i)]
	return functionModules[first] && (i == from || src[i-1] != '.')
}

// bytesOnly are functions that take bytes and refuse a str, which
// .decode() and a hash's .hexdigest() return.
var bytesOnly = setOf("b64encode", "urlsafe_b64encode", "standard_b64encode", "b32encode", "b16encode", "a85encode", "b85encode", "hexlify",
	"md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake2s")

// elementTests are the numpy functions that test each element of an
// array, which nobody asks of the one bool .all() or .any() returns.
var elementTests = setOf("isfinite", "isnan", "isinf", "isneginf", "isposinf", "isnat")

// limits are the attributes of np.iinfo and np.finfo results, which
// the types they describe do not have.
var limits = setOf("max", "min", "eps", "bits", "tiny", "resolution", "smallest_normal")

// limitAttr reports whether the expression a takes an attribute of
// limits, as np.int32.max and np.int64.max + 1 do.
func limitAttr(a string) bool {
	for k := strings.IndexByte(a, '.'); k >= 0; {
		if e := wordEnd(a, k+1); k > 0 && limits[a[k+1:e]] {
			return true
		}
		n := strings.IndexByte(a[k+1:], '.')
		if n < 0 {
			break
		}
		k += n + 1
	}
	return false
}

// scalarTypes are builtin types that are not generic: no annotation or
// expression subscripts them.
var scalarTypes = setOf("bool", "bytes", "complex", "float", "int", "str")

// lengthOfSum reports whether the call len( at opener takes one argument
// that adds a number to an operand or takes one from it, as len(d + 1):
// that fails on a sequence and keeps an array's length, while len(d) + 1
// is how code counts.
func lengthOfSum(src string, opener int) bool {
	args, ok := callArgs(src, opener)
	if !ok || len(args) != 1 {
		return false
	}
	a, depth := args[0], 0
	for k := 0; k < len(a); k++ {
		switch c := a[k]; {
		case isQuote(c):
			k = skipString(a, k, len(a)) - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && k > 0 && (c == '+' || c == '-') && a[k-1] == ' ' && k+2 < len(a) && a[k+1] == ' ':
			if isDigit(a[k+2]) && numberEnd(a, k+2) == len(a) || isDigit(a[0]) && numberEnd(a, 0) == k-1 {
				return true
			}
			if r := a[k+2:]; r[0] == '(' && matchingOpener(r, len(r)-1) == 0 && comparison(r) {
				return true // a bool added, as in len(word + (i > 0)), where len(word) + (i > 0) counts
			}
		case depth == 0 && k > 0 && (c == '/' || c == '*' && k+1 < len(a) && a[k+1] == '*'):
			// A sequence divided or raised to a number, as in
			// len(self.h // 256), has no length.
			r := strings.TrimLeft(strings.TrimLeft(a[k:], "/*"), " ")
			if r != "" && isDigit(r[0]) && numberEnd(r, 0) == len(r) {
				return true
			}
		}
	}
	return false
}

// comparison reports whether the parenthesized expression r compares,
// outside strings.
func comparison(r string) bool {
	for k := 0; k < len(r); k++ {
		switch c := r[k]; {
		case isQuote(c):
			k = skipString(r, k, len(r)) - 1
		case (c == '<' || c == '>') && k+1 < len(r) && r[k+1] == c:
			k++ // a shift
		case c == '<' || c == '>':
			return true
		case (c == '=' || c == '!') && k+1 < len(r) && r[k+1] == '=':
			return true
		}
	}
	return false
}

// typeOfDunder reports whether the call type( at opener takes one
// argument ending in a dunder attribute whose type is known (a str, a
// dict), as type(root.__name__), while type(root).__name__ is how code
// reads a type's own. Others are asked their type, as types.py does with
// type(exc.__traceback__) and type(object().__str__).
func typeOfDunder(src string, opener int) bool {
	args, ok := callArgs(src, opener)
	if !ok || len(args) != 1 {
		return false
	}
	a := args[0]
	k := strings.LastIndexByte(a, '.')
	return k > 0 && knownDunders[a[k+1:]]
}

// knownDunders are the dunder attributes whose type every object shares.
var knownDunders = setOf("__name__", "__qualname__", "__module__", "__doc__", "__dict__",
	"__file__", "__all__", "__slots__", "__annotations__")

// arithmeticInArg reports whether the argument starting at i, up to the
// comma or closer ending it (before to), holds an arithmetic operator
// outside brackets.
func arithmeticInArg(src string, i, to int) bool {
	// A string formatted with %, as dtype='U%s' % n, is a type's name.
	t := strings.TrimLeft(src[i:to], " ")
	format := t != "" && isQuote(t[0])
	return argHolds(src, i, to, func(k int) bool {
		return k > i && arithmeticAfter(src[k:min(k+3, to)]) && !(format && strings.TrimLeft(src[k:to], " ")[0] == '%')
	})
}

// arrayMethodInArg reports whether the argument starting at i (see
// arithmeticInArg) calls a method of arrays outside brackets, as
// dtype=np.intp.cumsum() does: a type has none of them.
func arrayMethodInArg(src string, i, to int) bool {
	return argHolds(src, i, to, func(k int) bool {
		if src[k] != '.' {
			return false
		}
		e := wordEnd(src, k+1)
		return e < to && src[e] == '(' && arrayMethods[src[k+1:e]]
	})
}

// arrayMethods are methods of arrays that compute from their items.
var arrayMethods = setOf("cumsum", "cumprod", "sum", "prod", "mean", "std", "var", "max", "min",
	"argmax", "argmin", "reshape", "ravel", "flatten", "transpose", "astype", "tolist", "copy")

// argHolds reports whether at holds at an offset of the argument
// starting at i, up to the comma or closer ending it (before to), outside
// brackets and strings.
func argHolds(src string, i, to int, at func(k int) bool) bool {
	depth := 0
	for k := i; k < to; k++ {
		switch c := src[k]; {
		case isQuote(c):
			k = skipString(src, k, to) - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth--; depth < 0 {
				return false
			}
		case c == ',' && depth == 0, c == '\n':
			return false
		case depth == 0 && at(k):
			return true
		}
	}
	return false
}

// identityStart reports whether the argument of the call whose bracket
// is at opener starts as a generator yielding its own loop variable, as
// f(x for x in xs).
func identityStart(src string, opener int) bool {
	e := wordEnd(src, opener+1)
	w := src[opener+1 : e]
	return w != "" && !keywords[w] && strings.HasPrefix(src[e:], " for "+w+" in ")
}

// identityGenerator reports whether the call whose bracket is at opener
// (see identityStart) takes as its only argument a generator that yields
// its own loop variable unfiltered, as f(x for x in xs): that is f(xs)
// written long, which nobody writes, while a closer lost after the
// element, as in tuple(f(x) for x in xs), gives it.
func identityGenerator(src string, opener int) bool {
	args, ok := callArgs(src, opener)
	if !ok || len(args) != 1 {
		return false
	}
	return !strings.Contains(args[0], " if ") && strings.Count(args[0], " for ") == 1
}

// unaryBefore reports whether a unary +, - or ~ stands right before
// src[k], after an opening bracket, a comma or an =, from from on.
func unaryBefore(src string, from, k int) bool {
	j := nonSpaceBefore(src, from, k)
	if j < from || strings.IndexByte("+-~", src[j]) < 0 {
		return false
	}
	j = nonSpaceBefore(src, from, j)
	return j >= from && strings.IndexByte("([{,=", src[j]) >= 0
}

// addedBefore reports whether the operand at k in src follows a +.
func addedBefore(src string, from, k int) bool {
	j := nonSpaceBefore(src, from, k)
	return j >= from && src[j] == '+'
}

// arithmeticAfter reports whether text starts with an arithmetic
// operator, after spaces, as + does in True + bias (not an augmented
// assignment, nor the | of a type union such as None | int).
func arithmeticAfter(text string) bool {
	t := strings.TrimLeft(text, " ")
	if t == "" || strings.IndexByte("+-*/%@", t[0]) < 0 {
		return false
	}
	n := 1
	if len(t) > 1 && (t[0] == '*' || t[0] == '/') && t[1] == t[0] {
		n = 2 // ** or //
	}
	return n >= len(t) || t[n] != '='
}

// binaryAfter reports whether text, which follows an opening bracket or a
// comma, starts with an operator written as a binary one, a space after
// it: what comes before it is missing.
func binaryAfter(text string) bool {
	t := strings.TrimLeft(text, " ")
	return len(t) > 1 && strings.IndexByte("+-*/%@&|^<>", t[0]) >= 0 && t[1] == ' '
}
