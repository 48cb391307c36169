// Package tomlbound bounds the TOML texts vis-agent parses that untrusted
// code may have written (a session's pyproject.toml, vis.toml, the files
// a block changed): BurntSushi/toml keeps every prefix of a key's path,
// so its time and memory grow with the square of a key's depth (a 16 KB
// dotted key took 3 s and 940 MiB, 50 KB passed 2 GiB). A text over the
// bounds is refused before any parse.
package tomlbound

import (
	"fmt"
	"strings"
)

const (
	// MaxBytes is the largest text parsed.
	MaxBytes = 1 << 20
	// MaxDepth bounds how deep a key is (Depth).
	MaxDepth = 32
)

// Check says why src is not to be parsed, nil when it may be.
func Check(src string) error {
	if len(src) > MaxBytes {
		return fmt.Errorf("over %d MiB, not read", MaxBytes>>20)
	}
	if Depth(src) > MaxDepth {
		return fmt.Errorf("keys, arrays or inline tables nested more than %d deep, not read", MaxDepth)
	}
	return nil
}

// Depth is the depth of src's deepest key, outside strings and
// comments: the parts of its table's header, its own dotted parts and the
// arrays and inline tables around it. It is read roughly (a float counts
// as two parts): the bound only needs to hold for the texts that parse.
func Depth(src string) int {
	nest, table, run, deepest := 0, 0, 0, 0
	header, headerParts := false, 0 // in a [table] or [[table]] header
	dot, lineStart := false, true
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\n':
			run, dot, lineStart = 0, false, true
			continue
		case c == ' ' || c == '\t' || c == '\r':
			continue
		case c == '#':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
			continue
		case c == '.':
			dot = true
		case c == '"' || c == '\'' || bareKey(c):
			if c == '"' || c == '\'' {
				i = stringEnd(src, i)
			} else {
				for i+1 < len(src) && bareKey(src[i+1]) {
					i++
				}
			}
			if !dot {
				run = 0
			}
			run, dot = run+1, false
			if header {
				headerParts = run
			}
			deepest = max(deepest, nest+table+run)
		case c == '[' || c == '{':
			if c == '[' && lineStart && nest == 0 {
				header, table = true, 0
			}
			nest++
			run, dot = 0, false
			deepest = max(deepest, nest+table)
		case c == ']' || c == '}':
			nest = max(nest-1, 0)
			if header && nest == 0 {
				header, table = false, headerParts
			}
			run, dot = 0, false
		default:
			run, dot = 0, false
		}
		lineStart = false
	}
	return deepest
}

// bareKey reports whether c may be part of a bare TOML key (or a number).
func bareKey(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// stringEnd is the offset of the last byte of the TOML string that starts
// at src[i] (its quote), or of src's last byte when it does not end.
func stringEnd(src string, i int) int {
	q := src[i : i+1]
	if strings.HasPrefix(src[i:], q+q+q) {
		end := strings.Index(src[i+3:], q+q+q)
		if end < 0 {
			return len(src) - 1
		}
		return i + 3 + end + 2
	}
	for i++; i < len(src) && src[i] != q[0] && src[i] != '\n'; i++ {
		if q == `"` && src[i] == '\\' {
			i++
		}
	}
	return min(i, len(src)-1)
}
