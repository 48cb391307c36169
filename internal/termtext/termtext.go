// Package termtext shows untrusted text on a terminal as text: what a
// sandbox session sets (a block's output, an attachment's name or kind, a
// docstring, a block's code in the journal) or a remote peer answers may
// carry escape sequences that set the clipboard (OSC 52), the window
// title, move the cursor, clear the screen, conceal text or answer back
// through the terminal. Every command prints such strings through this
// package, so the user sees what was there instead of the terminal
// obeying it:
//
//   - Writer (Output for a whole one), for a block's output: colours
//     (SGR) kept, and reset at its end; conceal (SGR 8) and every other
//     escape sequence and control character but newline and tab shown
//     escaped, carriage returns too unless KeepCR (a progress bar
//     redrawing its line, as `sandbox run` shows a block's output live).
//   - Text, for everything else a person reads (code, docstrings,
//     messages): only newline and tab kept; every other control, every
//     escape sequence (colours too: code is not to be drawn over or
//     hidden), C1 controls, bidirectional and invisible formatting
//     characters and bytes that are not UTF-8 shown escaped.
//   - Line, for one-line fields (a table's cell, a name): Text with newline
//     and tab shown escaped too.
//   - JSON, for JSON printed where a terminal may read it.
//
// Escaped means visible: \r, \n and \t, \x1b for another byte, \u009b for
// a character.
package termtext

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPending bounds a sequence held back until its end arrives: longer
// ones are shown escaped as they are.
const maxPending = 64

// Writer filters what it passes to W; Flush writes what it held back (a
// sequence cut at the end of the output).
type Writer struct {
	W io.Writer
	// KeepCR passes carriage returns: a block's output shown as it runs,
	// where a progress bar redraws its own line. A record of it (the
	// journal) shows them escaped.
	KeepCR  bool
	pending []byte
	out     []byte
	// styled: a colour was kept and not reset since; Flush resets it, so
	// what follows (the next block's code in the journal, the prompt)
	// cannot be coloured out of sight.
	styled bool
}

// Write filters p, holding back a sequence it cuts, and reports p written.
func (w *Writer) Write(p []byte) (int, error) {
	_, err := w.W.Write(w.filter(append(w.pending, p...), true))
	return len(p), err
}

// Flush writes what Write held back, escaped, and resets the colours the
// output left set.
func (w *Writer) Flush() error {
	out := w.filter(w.pending, false)
	if w.styled {
		out, w.styled = append(out, reset...), false
	}
	_, err := w.W.Write(out)
	return err
}

// reset turns every attribute off (SGR 0).
const reset = "\x1b[0m"

// filter is data made safe; with hold, a sequence cut at its end is kept
// in w.pending rather than escaped.
func (w *Writer) filter(data []byte, hold bool) []byte {
	w.pending = nil
	w.out = w.out[:0]
	for i := 0; i < len(data); {
		n, complete := w.step(data[i:])
		if !complete {
			if hold && len(data)-i <= maxPending {
				w.pending = append([]byte(nil), data[i:]...)
				break
			}
			n = w.escapeOne(data[i:])
		}
		i += n
	}
	return w.out
}

// step handles what starts data: a printable run, an SGR sequence kept, or
// one byte (or C1 character) escaped. complete is false when data ends
// before it can tell.
func (w *Writer) step(data []byte) (int, bool) {
	c := data[0]
	switch {
	case c == 0x1b:
		n, sgr, complete := csi(data)
		if !complete {
			return 0, false
		}
		if sgr && !conceals(data[2:n-1]) {
			w.out = append(w.out, data[:n]...)
			w.styled = string(data[:n]) != reset && string(data[:n]) != "\x1b[m"
			return n, true
		}
		return w.escapeOne(data), true
	case c == 0xc2: // U+0080..U+009F are C1 controls, CSI among them
		if len(data) < 2 {
			return 0, false
		}
		if data[1] >= 0x80 && data[1] <= 0x9f {
			w.out = fmt.Appendf(w.out, `\u%04x`, rune(data[1]))
			return 2, true
		}
	case c == '\r' && !w.KeepCR:
		w.out = append(w.out, `\r`...)
		return 1, true
	case c < 0x20 && c != '\n' && c != '\t' && c != '\r', c == 0x7f:
		return w.escapeOne(data), true
	}
	// A run of bytes that need nothing.
	n := 1
	for n < len(data) && w.safe(data[n]) {
		n++
	}
	w.out = append(w.out, data[:n]...)
	return n, true
}

func (w *Writer) safe(c byte) bool {
	return c >= 0x20 && c != 0x7f && c != 0xc2 || c == '\n' || c == '\t' || c == '\r' && w.KeepCR
}

// escapeOne shows the first byte escaped (\x1b), the rest being text.
func (w *Writer) escapeOne(data []byte) int {
	w.out = fmt.Appendf(w.out, `\x%02x`, data[0])
	return 1
}

// csi reads an escape sequence at the start of data (data[0] is ESC): n
// bytes long, and whether it is SGR (ESC [ then digits, ';' and ':' only,
// then 'm'). Anything but a CSI is decided on its second byte. complete
// is false when data ends inside it.
func csi(data []byte) (n int, sgr bool, complete bool) {
	if len(data) < 2 {
		return 0, false, false
	}
	if data[1] != '[' {
		return 1, false, true
	}
	params := true
	for i := 2; i < len(data); i++ {
		c := data[i]
		switch {
		case c >= 0x30 && c <= 0x3f:
			params = params && (c >= '0' && c <= '9' || c == ';' || c == ':')
		case c >= 0x20 && c <= 0x2f:
			params = false // intermediates: not SGR
		case c >= 0x40 && c <= 0x7e:
			return i + 1, params && c == 'm', true
		default: // not a sequence at all
			return i, false, true
		}
	}
	return 0, false, false
}

// conceals reports whether the SGR parameters params (between "ESC [" and
// "m") turn on conceal (8): text the terminal then does not show, which
// would hide what a block printed. The colour parameters 38, 48 and 58
// take arguments (5;N or 2;R;G;B) that are not attributes.
func conceals(params []byte) bool {
	fields := strings.Split(string(params), ";")
	for i := 0; i < len(fields); i++ {
		first, _, _ := strings.Cut(fields[i], ":") // 38:2::R:G:B holds its arguments
		v, _ := strconv.Atoi(first)
		switch {
		case v == 8:
			return true
		case (v == 38 || v == 48 || v == 58) && first == fields[i] && i+1 < len(fields):
			switch fields[i+1] {
			case "5":
				i += 2
			case "2":
				i += 4
			}
		}
	}
	return false
}

// Output is s, a whole output of a block, as Writer shows it (carriage
// returns escaped).
func Output(s string) string {
	var b strings.Builder
	w := Writer{W: &b}
	io.WriteString(&w, s)
	w.Flush()
	return b.String()
}

// Text is s for a person to read on a terminal: newlines and tabs kept,
// everything else that is not a printable character shown escaped (see
// the package doc). Nothing is dropped: what was there can be read.
func Text(s string) string { return strict(s, true) }

// Line is s as one line of a terminal (a table's cell, a name in a
// message): as Text, with newlines and tabs shown escaped too.
func Line(s string) string { return strict(s, false) }

// strict escapes s; keep keeps newlines and tabs.
func strict(s string, keep bool) string {
	clean := true
	for i := 0; i < len(s) && clean; i++ {
		c := s[i]
		clean = c >= 0x20 && c < 0x7f || keep && (c == '\n' || c == '\t')
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keep && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && (r < 0x20 || r == 0x7f):
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hidden reports whether r is a character a terminal does not show as
// itself: a control (C1 included), a format character (the bidirectional
// overrides that make text show in another order, zero-width ones) or a
// line or paragraph separator.
func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// JSON is JSON text (one value or many, as an encoder writes them) safe on
// a terminal and meaning the same: control characters, DEL and the C1
// controls, which encoding/json leaves raw inside strings, written as
// \u escapes; newlines and tabs kept (whitespace between values); bytes
// that are not UTF-8 (never in JSON) written as \ufffd.
func JSON(data []byte) []byte {
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			out = append(out, `\ufffd`...)
		case r == '\n' || r == '\t':
			out = append(out, byte(r))
		case unicode.IsControl(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, data[i:i+n]...)
		}
		i += n
	}
	return out
}
