package mcpserver

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// capture keeps a block's output within max characters however much it
// prints: the first half as printed and the latest half as it goes on.
// What lies between is counted, never held, so a block printing gigabytes
// costs the server little memory.
type capture struct {
	max, headMax, tailMax int
	head                  strings.Builder
	headChars             int
	tail                  []byte // output past the head; trimmed to its last tailMax characters
	total                 int    // characters printed
}

func newCapture(max int) *capture {
	return &capture{max: max, headMax: max / 2, tailMax: max - max/2}
}

func (c *capture) write(s string) {
	c.total += utf8.RuneCountInString(s)
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

// text is the output as the agent reads it: whole, or the first and last
// parts with a note between them saying what is missing and how to see it.
func (c *capture) text() string {
	if !c.truncated() {
		return c.head.String() + string(c.tail)
	}
	tail := lastChars(c.tail, c.tailMax)
	omitted := c.total - c.headChars - utf8.RuneCount(tail)
	head := c.head.String()
	sep := "\n"
	if strings.HasSuffix(head, "\n") {
		sep = ""
	}
	return fmt.Sprintf("%s%s[... %d characters omitted: the block printed %d characters and results are capped at %d; this shows the first %d and the last %d. "+
		"The omitted part is not kept anywhere. To see it, print less (a slice, a count, a summary), or write the data to a file in the workspace and print parts of that file.]\n%s",
		head, sep, omitted, c.total, c.max, c.headChars, utf8.RuneCount(tail), string(tail))
}
