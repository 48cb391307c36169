package repair

import "strings"

// Code a closer put back at a line's end leaves when the writer lost it
// inside the line, and which fails whenever it runs: a place for the
// closer that gives such code is not meant when another place does not.

// failsWhenRun reports whether the code src[from:to] calls a string or
// uses it with an operator strings lack (see oddStringUse), calls a list,
// dict or set display, adds a number literal and a string, converts to
// str a sum holding a string literal, does arithmetic on or slices a
// numpy scalar type, passes super a method's result as its object or
// getattr a function's result as the name, does arithmetic on a range,
// zip, map, filter, enumerate or reversed, subtracts from or divides a
// shape, calls a module, takes an attribute str lacks of a dunder name,
// calls a number or takes an attribute numbers lack, takes an attribute
// of a tuple display or multiplies one by a float, gives Optional two
// types, asserts a tuple, uses a generator's loop variable outside it, or holds
// a display of literals whose items are not all of one depth, as
// [1, 1, [1, -1]] (see mixedRow).
func failsWhenRun(src string, from, to int) bool {
	if oddStringUse(src[from:to]) >= 0 {
		return true // as in output.count('\n' - crlf) for output.count('\n') - crlf
	}
	if t := strings.TrimLeft(src[from:to], " \t"); strings.HasPrefix(t, "assert (") {
		if items, end := splitItems(t, len("assert ("), false); len(items) > 1 && strings.TrimSpace(t[end+1:]) == "" {
			return true // a tuple is always true, as in assert (lx0, ly0, la0 == (-2, 11, 135))
		}
	}
	scans := 0 // calls and displays whose items are read, bounded as in misusesLiteral
	type open struct {
		at      int
		display bool
	}
	var displays []open
	for k := from; k < to; k++ {
		switch c := src[k]; {
		case isQuote(c):
			e := skipString(src, k, to)
			if e > k+1 && src[e-1] == c && formatCut(src, k, e, to) {
				return true // np.array(v, dtype='U%s') % n for np.array(v, dtype='U%s' % n)
			}
			k = e - 1
		case c == '#':
			k = lineEndFrom(src, k) - 1
		case c == '(' || c == '[' || c == '{':
			// A list, dict or set display, not a subscript or call.
			displays = append(displays, open{k, c != '(' && (k == from || !operandEnd(src[k-1]))})
		case c == ')' || c == ']' || c == '}':
			n := len(displays)
			if n > 0 && c == ')' && scans < maxCallsChecked && (displays[n-1].at == from || !operandEnd(src[displays[n-1].at-1])) {
				// A tuple's only methods are count and index.
				if scans++; tupleMisused(src, displays[n-1].at, k, to) {
					return true // np.empty((2, 2).flat) for np.empty((2, 2)).flat
				}
			}
			if n > 0 && displays[n-1].display && nextNonSpace(src, k+1, to) == '(' {
				return true // as in f(names=["x", "y"](args) for f(names=["x", "y"])(args)
			}
			if n > 0 && displays[n-1].display && c == ']' && scans < maxCallsChecked {
				if scans++; mixedRow(src, displays[n-1].at) {
					return true
				}
			}
			displays = displays[:max(n-1, 0)]
		case isDigit(c) && (k == from || !isIdentChar(src[k-1]) && src[k-1] != '.'):
			e := numberEnd(src, k)
			if stringAdded(src, from, to, k, e) {
				return true // as in kind[0 + str(info.serial)] for kind[0] + str(info.serial)
			}
			if numberTrailer(src, k, e, to) {
				return true // RBF(length_scale=1.0(X)) for RBF(length_scale=1.0)(X)
			}
			k = max(e, k+1) - 1
		case isIdentStart(c):
			e := max(wordEnd(src, k), k+1)
			w, attr := src[k:e], k > 0 && src[k-1] == '.'
			switch {
			case !attr && w == "Optional" && e < to && src[e] == '[' && scans < maxCallsChecked:
				scans++
				if args, _ := argsUpTo(src, e); len(args) > 1 {
					return true // Optional[str, Optional[str]] for Optional[str], Optional[str]
				}
			case attr && numpyScalars[w] && k > 1 && isIdentChar(src[k-2]) && scalarMisused(src[e:to]):
				return true // as in np.arange(6, dtype=np.float64[::2]) for np.arange(6, dtype=np.float64)[::2]
			case !attr && (w == "str" || w == "super" || w == "getattr") && e < to && src[e] == '(' && scans < maxCallsChecked:
				scans++
				if args, ok := callArgs(src, e); ok && (w == "str" && len(args) == 1 && sumWithString(args[0]) ||
					w == "super" && len(args) == 2 && isCallExpr(args[1]) && strings.Contains(args[1], ".") ||
					w == "getattr" && len(args) >= 2 && isCallExpr(args[1]) && plainCall(args[1])) {
					// str(prev + '\n') for str(prev) + '\n'; super(T, cls.__new__(cls)) for super(T, cls).__new__(cls);
					// getattr(g, func(foo=1)) for getattr(g, func)(foo=1)
					return true
				}
			case !attr && iterators[w] && e < to && src[e] == '(' && scans < maxCallsChecked:
				scans++
				if _, c := argsUpTo(src, e); c >= 0 && c < to && arithmeticAfter(src[c+1:to]) && !strings.HasPrefix(strings.TrimLeft(src[c+1:to], " "), "@") {
					return true // list(range(n) * 2) for list(range(n)) * 2
				}
			case !attr && e < to && src[k:e] != "self" && sameOperandAfter(src, k, e, to):
				return true // local(t - t) for local(t) - t
			case attr && strings.HasPrefix(w, "st_") && scans < maxCallsChecked:
				if scans++; statArgument(src, from, k) {
					return true // os.fstat(self._fd.st_size) for os.fstat(self._fd).st_size
				}
			case attr && w == "shape" && e < to && shapeArithmetic(src[e:to]):
				return true // min(X.shape - 1) for min(X.shape) - 1
			case attr && strDunders[w] && e+1 < to && src[e] == '.':
				if m := wordEnd(src, e+1); m > e+1 && !strMethods[src[e+1:m]] && !strings.HasPrefix(src[e+1:m], "__") || strings.HasPrefix(src[e+1:], "__dict__") {
					return true // sys.modules.get(t.__module__.__dict__) for sys.modules.get(t.__module__).__dict__
				}
			case !attr && modules[w] && e < to && src[e] == '(' && scans < maxCallsChecked:
				if scans++; !redefines(src, w) {
					return true // get_xp(np(_linalg.pinv)) for get_xp(np)(_linalg.pinv)
				}
			case !attr && w == "for" && len(displays) > 0 && scans < maxCallsChecked:
				scans++
				// The bracket around the generator's, or the value the
				// line assigns.
				outer := from - 1
				if len(displays) > 1 {
					outer = displays[len(displays)-2].at
				} else if eq := strings.LastIndex(src[from:displays[0].at], " = "); eq >= 0 {
					outer = from + eq + 2
				}
				if loopVarBefore(src, outer, displays[len(displays)-1].at, e, to) {
					return true // {name: sum(v for (name, v) in items)} for {name: sum(v) for (name, v) in items}
				}
			}
			k = e - 1
		}
	}
	return false
}

// operandEnd reports whether c ends an operand, so that a bracket right
// after it subscripts or calls it.
func operandEnd(c byte) bool {
	return isIdentChar(c) || c == ')' || c == ']' || c == '}' || isQuote(c)
}

// nextNonSpace returns the first byte from i before to that is no space,
// or 0.
func nextNonSpace(src string, i, to int) byte {
	for ; i < to; i++ {
		if src[i] != ' ' && src[i] != '\t' {
			return src[i]
		}
	}
	return 0
}

// plusOperand returns where the operand after a + at i (after spaces)
// starts, before to, or -1 when no + (nor +=) stands there or nothing
// follows it.
func plusOperand(src string, i, to int) int {
	rest := strings.TrimLeft(src[i:to], " \t")
	if !strings.HasPrefix(rest, "+") || strings.HasPrefix(rest, "+=") {
		return -1
	}
	if n := to - len(strings.TrimLeft(rest[1:], " \t")); n < to {
		return n
	}
	return -1
}

// formatCut reports whether the string literal src[k:e], a %-format, is
// followed by closers and then the % that fills it: a closer put between
// a format and its values.
func formatCut(src string, k, e, to int) bool {
	t := strings.TrimLeft(src[e:to], " ")
	n := len(t)
	t = strings.TrimLeft(t, ")] ")
	return len(t) < n && strings.HasPrefix(t, "%") && !strings.HasPrefix(t, "%=") && hasConversion(src[k+1:e-1])
}

// soleOperandBefore reports whether what stands before k, but for
// spaces, opens an expression (a bracket, a comma, an = or a colon), so
// the literal at k is a whole operand, not the right one of a * or %.
func soleOperandBefore(src string, from, k int) bool {
	b := nonSpaceBefore(src, from, k)
	return b < from || strings.IndexByte("([{,=:", src[b]) >= 0 && !(src[b] == '=' && b > from && strings.IndexByte("=!<>", src[b-1]) >= 0)
}

// wholeOperandAfter reports whether the literal ending at e is a whole
// operand: a closer, a comma, a colon, a + or - or the line's end
// follows it, not an operator binding tighter or a trailer.
func wholeOperandAfter(src string, e, to int) bool {
	c := nextNonSpace(src, e, to)
	return c == 0 || strings.IndexByte("#\r\n)]},:+-", c) >= 0 && !strings.HasPrefix(strings.TrimLeft(src[e:to], " \t"), "->")
}

// stringAdded reports whether the number literal src[k:e], a whole
// operand, has a string literal or a str() call added to it, as in
// 0 + str(serial).
func stringAdded(src string, from, to, k, e int) bool {
	if !soleOperandBefore(src, from, k) {
		return false
	}
	n := plusOperand(src, e, to)
	switch {
	case n < 0:
		return false
	case isQuote(src[n]):
		s := skipString(src, n, to)
		return s > n+1 && src[s-1] == src[n] && wholeOperandAfter(src, s, to)
	case strings.HasPrefix(src[n:to], "str("):
		_, c := argsUpTo(src, n+3)
		return c >= 0 && c < to && wholeOperandAfter(src, c+1, to)
	}
	return false
}

// sumWithString reports whether the expression a adds a string literal
// at its top level, as prev + '\n' does: it is a string already.
func sumWithString(a string) bool {
	depth := 0
	for k := 0; k < len(a); k++ {
		switch c := a[k]; {
		case isQuote(c):
			e := skipString(a, k, len(a))
			before := strings.TrimRight(a[:k], " ")
			if depth == 0 && (strings.HasSuffix(before, "+") && !strings.HasSuffix(before, "++") ||
				strings.HasPrefix(strings.TrimLeft(a[e:], " "), "+")) {
				return true
			}
			k = e - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		}
	}
	return false
}

// numpyScalars are numpy's scalar types, which take neither arithmetic
// nor a slice (a generic alias takes a type, as np.floating[Any] does).
var numpyScalars = setOf("float16", "float32", "float64", "float128", "longdouble", "int8", "int16",
	"int32", "int64", "uint8", "uint16", "uint32", "uint64", "intp", "uintp", "complex64",
	"complex128", "bool_", "int_", "float_", "double", "single")

// scalarMisused reports whether rest, what follows a numpy scalar type,
// does arithmetic on it or slices it, as in np.float64 * b or
// np.float64[::2].
func scalarMisused(rest string) bool {
	if strings.HasPrefix(rest, "[") {
		items, end := splitItems(rest, 1, false)
		return end > 0 && len(items) > 0 && strings.Contains(items[0], ":")
	}
	t := strings.TrimLeft(rest, " ")
	return t != "" && strings.IndexByte("*/+-%@", t[0]) >= 0 && !strings.HasPrefix(t, "->")
}

// wrongCount reports whether the closer put in next gives an assignment
// to several names a tuple of more than one value and not as many values
// as names, as a, b, x = f(a), f(b, f(x)) does, or a bracketed target of
// one count a tuple of another, as (x1, y1, (x2, y2)) = p1, p2 does:
// unpacking it fails.
func wrongCount(src string, opener int, next string) bool {
	if targets, value := unpacking(src, opener); targets >= 2 {
		items, _ := splitItems(next, value, true)
		return len(items) > 1 && len(items) != targets && items[len(items)-1] != ""
	}
	if src[opener] != '(' && src[opener] != '[' || strings.TrimSpace(src[lineStartOf(src, opener):opener]) != "" {
		return false
	}
	targets, end := splitItems(next, opener+1, false)
	if end < 0 || !strings.HasPrefix(next[end+1:], " = ") {
		return false
	}
	values, _ := splitItems(next, end+4, true)
	return len(targets) > 1 && len(values) > 1 && len(targets) != len(values) &&
		!starred(targets) && !starred(values) && targets[len(targets)-1] != "" && values[len(values)-1] != ""
}

// starred reports whether one of items is unpacked with a star.
func starred(items []string) bool {
	for _, t := range items {
		if strings.HasPrefix(t, "*") {
			return true
		}
	}
	return false
}

// iterators are the builtins returning an iterator or a range, which
// take no arithmetic.
var iterators = setOf("range", "zip", "map", "filter", "enumerate", "reversed")

// strDunders are the attributes every object, class or module has that
// are strings.
var strDunders = setOf("__name__", "__qualname__", "__module__", "__file__")

// modules are module names a call never names: a module is not callable
// (pd is turtle's pendown, so pandas' pd is left out).
var modules = setOf("np", "numpy", "cp", "jnp", "xp", "torch", "math", "os", "sys", "re", "json")

// shapeArithmetic reports whether rest, what follows .shape, subtracts
// from it, divides it or takes its power: a tuple has none of these.
func shapeArithmetic(rest string) bool {
	t := strings.TrimLeft(rest, " ")
	return arithmeticAfter(t) && strings.IndexByte("-/%", t[0]) >= 0 || strings.HasPrefix(t, "**")
}

// loopVarBefore reports whether a name the for at [forAt, to) binds, in
// the bracket opened at inner, stands in the bracket opened at outer
// before inner: there the generator's variable is not defined, as name
// in {name: sum(v for (name, v) in items)}.
func loopVarBefore(src string, outer, inner, forAt, to int) bool {
	in := strings.Index(src[forAt:to], " in ")
	if in < 0 {
		return false
	}
	for _, t := range strings.FieldsFunc(src[forAt:forAt+in], func(r rune) bool { return strings.ContainsRune(" ,()[]", r) }) {
		if nameUse(src[outer+1:inner], t, false) {
			return true
		}
	}
	return false
}

// mixedRow reports whether the list display opened at o holds literals
// only (numbers, strings, constants and displays of them) of more than
// one depth, as [-1, -1, [1, -1]] or [[0, 0, 0], [[0.25, 0.5]]] do: a
// matrix's rows are alike, and a lost closer joins a row to the next.
func mixedRow(src string, o int) bool {
	items, end := argsUpTo(src, o)
	if end < 0 || len(items) < 2 {
		return false
	}
	first := literalDepth(items[0], 0)
	if first < 0 {
		return false
	}
	mixed := false
	for _, it := range items[1:] {
		d := literalDepth(it, 0)
		if d < 0 {
			return false
		}
		mixed = mixed || d != first
	}
	return mixed
}

// literalDepth is how deep the literal a nests lists (0 for a number,
// string or constant), or -1 when a is not a literal, counting at most
// a few levels.
func literalDepth(a string, level int) int {
	a = strings.TrimLeft(a, "+-~ ")
	switch {
	case a == "":
		return -1
	case a[0] == '[' && strings.HasSuffix(a, "]") && level < 4:
		items, end := argsUpTo(a, 0)
		if end != len(a)-1 {
			return -1
		}
		depth := 0
		for _, it := range items {
			d := literalDepth(it, level+1)
			if d < 0 {
				return -1
			}
			depth = max(depth, d)
		}
		return depth + 1
	case isQuote(a[0]):
		if skipString(a, 0, len(a)) == len(a) && len(a) > 1 && a[len(a)-1] == a[0] {
			return 0
		}
	case isDigit(a[0]) || a[0] == '.' && len(a) > 1 && isDigit(a[1]):
		if numberEnd(a, 0) == len(a) {
			return 0
		}
	case operandKeywords[a]:
		return 0
	}
	return -1
}

// plainCall reports whether the call a calls a name, not a method nor
// str, whose result is seldom a string.
func plainCall(a string) bool {
	n := wordEnd(a, 0)
	return n > 0 && n < len(a) && a[n] == '(' && a[:n] != "str" && a[:n] != "repr"
}

// sameOperandAfter reports whether the name src[k:e], a whole operand,
// has itself subtracted from it or divides itself, as t - t: always 0
// or 1, which nobody writes.
func sameOperandAfter(src string, k, e, to int) bool {
	if keywords[src[k:e]] || !soleOperandBefore(src, 0, k) {
		return false
	}
	rest := strings.TrimLeft(src[e:to], " ")
	if rest == "" || rest[0] != '-' && rest[0] != '/' || len(rest) > 1 && (rest[1] == '=' || rest[1] == '/') {
		return false
	}
	t := strings.TrimLeft(rest[1:], " ")
	w := src[k:e]
	return strings.HasPrefix(t, w) && (len(t) == len(w) || !isIdentChar(t[len(w)]) && strings.IndexByte(".([", t[len(w)]) < 0)
}

// statArgument reports whether the attribute at k, an st_ field of a
// stat result, stands in the arguments of a call of stat, fstat or lstat
// opened on its line: the call returns the result that has it.
func statArgument(src string, from, k int) bool {
	depth := 0
	for i := k - 1; i >= from; i-- {
		switch src[i] {
		case ')', ']', '}':
			depth++
		case '(', '[', '{':
			if depth > 0 {
				depth--
				continue
			}
			name := calleeName(src, i)
			return src[i] == '(' && (name == "stat" || name == "fstat" || name == "lstat")
		}
	}
	return false
}

// numberMethods are the attributes of int and float (and complex's).
var numberMethods = setOf("real", "imag", "conjugate", "is_integer", "hex", "fromhex", "as_integer_ratio",
	"bit_length", "bit_count", "to_bytes", "from_bytes", "numerator", "denominator")

// numberTrailer reports whether the number literal src[k:e] (numberEnd
// takes in the attributes after it) is called or has an attribute
// numbers lack, as 1e-12.check() or 1.0(X).
func numberTrailer(src string, k, e, to int) bool {
	for d := k; d+1 < e; d++ {
		if src[d] != '.' || !isIdentStart(src[d+1]) {
			continue
		}
		w := src[d+1 : wordEnd(src, d+1)]
		if exponent := strings.IndexByte("eE", w[0]) >= 0 && strings.Trim(w[1:], "0123456789_") == "" ||
			w == "j" || w == "J"; !exponent {
			return !numberMethods[w] // an attribute, not an exponent as in 1.e5
		}
	}
	return e < to && src[e] == '('
}

// tupleMisused reports whether the parenthesis opened at o and closed at
// c, a tuple (a comma at its top level), has an attribute other than
// count or index, or is multiplied by a float literal, as (2, 2).flat or
// (10, 10, t) * 0.1: neither exists.
func tupleMisused(src string, o, c, to int) bool {
	if args, _ := argsUpTo(src, o); len(args) < 2 {
		return false
	}
	rest := src[c+1 : to]
	if strings.HasPrefix(rest, ".") {
		w := rest[1:wordEnd(rest, 1)]
		return w != "" && w != "count" && w != "index" && !strings.HasPrefix(w, "__")
	}
	t := strings.TrimLeft(rest, " ")
	if !strings.HasPrefix(t, "*") || strings.HasPrefix(t, "**") || strings.HasPrefix(t, "*=") {
		return false
	}
	t = strings.TrimLeft(t[1:], " ")
	n := numberEnd(t, 0)
	return n > 0 && strings.ContainsAny(t[:n], ".eE") && !strings.ContainsAny(t[:n], "xXjJ")
}
