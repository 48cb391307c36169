package mcpserver

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// capture keeps a block's output within max characters however much it
// prints: the first half as printed and the latest half as it goes on.
// What lies between is counted, never held in memory: once the output
// passes the cap, all of it goes to a spill file (itself bounded), from
// which the server makes an attachment, so a block printing gigabytes
// costs the server little memory.
type capture struct {
	max, headMax, tailMax int
	head                  strings.Builder
	headChars             int
	tail                  []byte // output past the head; trimmed to its last tailMax characters
	total                 int    // characters printed
	lines                 int    // newlines printed
	spill                 *spill // nil until the output passes the cap
	spillMax              int64  // bytes the spill keeps (0: no spill)
}

func newCapture(max int) *capture {
	return &capture{max: max, headMax: max / 2, tailMax: max - max/2}
}

func (c *capture) write(s string) {
	all := s
	c.total += utf8.RuneCountInString(s)
	c.lines += strings.Count(s, "\n")
	if c.headChars < c.headMax {
		i, n := 0, 0
		for i < len(s) && c.headChars+n < c.headMax {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			n++
		}
		c.head.WriteString(s[:i])
		c.headChars += n
		s = s[i:]
	}
	c.tail = append(c.tail, s...)
	// Nothing is trimmed before the output passes the cap (see below), so
	// when it does, head and tail still hold all of it.
	switch {
	case c.spill != nil:
		c.spill.write(all)
	case c.spillMax > 0 && c.truncated():
		c.spill = newSpill(c.spillMax)
		c.spill.write(c.head.String())
		c.spill.write(string(c.tail))
	}
	// A character is at most 4 bytes: past 8 bytes a character the tail
	// certainly holds more than it keeps, and trimming now costs O(1) per
	// byte written.
	if len(c.tail) > 8*c.tailMax+64 {
		c.tail = lastChars(c.tail, c.tailMax)
	}
}

// lastChars is the end of b holding at most n characters.
func lastChars(b []byte, n int) []byte {
	i := len(b)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRune(b[:i])
		i -= size
	}
	return append([]byte(nil), b[i:]...)
}

// truncated says whether the output was longer than the cap.
func (c *capture) truncated() bool { return c.total > c.max }

// notKept is the end of the note of a cut output no attachment holds.
const notKept = "the missing part is not kept: print less (a slice, a count, a summary), or write the data to a file and print parts of it"

// text is the output as the agent reads it: whole, or, after a first
// line saying how much is missing and (rest) where the whole is, its first
// and last parts, each cut at a line's end when one is near, with a line
// where the cut is.
func (c *capture) text(rest string) string {
	if !c.truncated() {
		return c.head.String() + string(c.tail)
	}
	head := c.head.String()
	if i := strings.LastIndexByte(head, '\n'); i >= len(head)/2 {
		head = head[:i+1]
	}
	tail := string(lastChars(c.tail, c.tailMax))
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 && i+1 < len(tail) {
		tail = tail[i+1:]
	}
	omitted := c.total - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
	lines := max(0, c.lines-strings.Count(head, "\n")-strings.Count(tail, "\n"))
	sep := ""
	if !strings.HasSuffix(head, "\n") {
		sep = "\n"
	}
	return fmt.Sprintf("[output was cut: %s lines / %s characters missing of %s / %s (results keep %s characters); %s]\n%s%s[... %s lines / %s characters cut here ...]\n%s",
		count(lines), count(omitted), count(c.lines), count(c.total), count(c.max), rest, head, sep, count(lines), count(omitted), tail)
}

// count is n with thousands separators: "36,899".
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// spill keeps a cut output whole in a temporary file, up to max bytes
// (past them it only counts). A failure to write is kept for the note.
type spill struct {
	f       *os.File
	max     int64
	written int64
	dropped int64
	err     error
}

func newSpill(max int64) *spill {
	f, err := os.CreateTemp("", "vis-agent-mcp-output-*.txt")
	if err == nil {
		os.Remove(f.Name()) // the open file is enough; a crash leaves nothing behind
	}
	return &spill{f: f, max: max, err: err}
}

func (s *spill) write(data string) {
	if s.err != nil {
		return
	}
	n := min(int64(len(data)), s.max-s.written)
	if n < int64(len(data)) {
		// Cut at a character's start, so the file stays valid UTF-8.
		for n > 0 && !utf8.RuneStart(data[n]) {
			n--
		}
	}
	if _, err := s.f.WriteString(data[:n]); err != nil {
		s.err = err
		return
	}
	s.written += n
	s.dropped += int64(len(data)) - n
}

// reader is the spilled output from its start; close releases the file.
func (s *spill) reader() (io.Reader, error) {
	if s.err != nil {
		return nil, s.err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return s.f, nil
}

func (s *spill) close() {
	if s != nil && s.f != nil {
		s.f.Close()
	}
}
