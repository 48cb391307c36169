// Package termtext shows untrusted text on a terminal as text: a sandbox
// block's output may carry escape sequences that set the clipboard (OSC
// 52), the window title, move the cursor, clear the screen or answer back
// through the terminal. A Writer keeps colour (SGR: ESC [ digits m) and
// shows every other escape sequence and control character escaped, so
// the user sees what the block printed instead of the terminal obeying it.
package termtext

import (
	"fmt"
	"io"
)

// maxPending bounds a sequence held back until its end arrives: longer
// ones are shown escaped as they are.
const maxPending = 64

// Writer filters what it passes to W; Flush writes what it held back (a
// sequence cut at the end of the output).
type Writer struct {
	W       io.Writer
	pending []byte
	out     []byte
}

// Write filters p, holding back a sequence it cuts, and reports p written.
func (w *Writer) Write(p []byte) (int, error) {
	_, err := w.W.Write(w.filter(append(w.pending, p...), true))
	return len(p), err
}

// Flush writes what Write held back, escaped.
func (w *Writer) Flush() error {
	_, err := w.W.Write(w.filter(w.pending, false))
	return err
}

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
		if sgr {
			w.out = append(w.out, data[:n]...)
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
	case c < 0x20 && c != '\n' && c != '\t' && c != '\r', c == 0x7f:
		return w.escapeOne(data), true
	}
	// A run of bytes that need nothing.
	n := 1
	for n < len(data) && safe(data[n]) {
		n++
	}
	w.out = append(w.out, data[:n]...)
	return n, true
}

func safe(c byte) bool {
	return c >= 0x20 && c != 0x7f && c != 0xc2 || c == '\n' || c == '\t' || c == '\r'
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
