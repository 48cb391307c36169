package protocol

import (
	"bytes"
	"fmt"
)

// Bounds limit one message a Conn reads, so that what decoding it costs
// is a small multiple of its line. The line alone does not do it: JSON
// decoded into Go values grows (a []string of empty strings takes 16
// bytes for each 3 of the line, a []int 8 for 2, and the slices double as
// they fill), and a 64 MiB line of them took a host past 1 GiB. Strings
// cost what their bytes do; the values are counted before decoding.
type Bounds struct {
	// Line: bytes, its newline included.
	Line int
	// Values: array elements and object members (each comma, opening
	// bracket and brace), all levels together.
	Values int
	// Depth: arrays and objects inside one another.
	Depth int
}

// The bounds of each link's reader.
var (
	// ClientBounds: a client's requests, as the host reads them (a block's
	// source fits; a request holds a few lists of names).
	ClientBounds = Bounds{Line: MaxLine, Values: 1 << 16, Depth: 32}
	// EventBounds: a host's events, as a client reads them (a block's
	// result lists its attachments, checks and .git files).
	EventBounds = Bounds{Line: MaxLine, Values: 1 << 20, Depth: 64}
	// ChildBounds: what a session's interpreter child writes to its host,
	// whose code is the attacker's: its events are output chunks (at most
	// OutChunk), results whose strings the child clips (MaxChildString)
	// and whose lists it caps (256 written files, the snapshot's
	// modules), the history's blocks, a defs listing.
	ChildBounds = Bounds{Line: MaxChildLine, Values: 1 << 16, Depth: 32}
	// CallBounds: a host call's header (protocol.CallRequest).
	CallBounds = Bounds{Line: MaxCallHeader, Values: 1 << 16, Depth: 32}
)

// MaxChildLine bounds one message of the child to its host.
const MaxChildLine = 16 << 20

// MaxChildString is the most characters the child puts in one string of
// a result (an error's message, traceback and excerpt, a syntax error's
// line): it cuts the middle of a longer one, saying how much.
const MaxChildString = 256 << 10

// BoundsError is a message past its link's Bounds: the link's stream is
// no longer trusted (a line too long is left half read).
type BoundsError struct{ msg string }

func (e *BoundsError) Error() string { return e.msg }

// Check returns a *BoundsError when line, one message, holds more values
// or deeper nesting than b allows. It reads only the structure of valid
// JSON (a line that is not JSON is refused by its decoder, before the
// decoder allocates anything), and allocates nothing.
func (b Bounds) Check(line []byte) error {
	values, depth := 0, 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"':
			// Skip the string: to its closing quote, past escapes.
			for i++; i < len(line); i++ {
				j := bytes.IndexAny(line[i:], `"\`)
				if j < 0 {
					i = len(line)
					break
				}
				i += j
				if line[i] == '"' {
					break
				}
				i++ // the escaped character
			}
		case '[', '{':
			depth++
			if depth > b.Depth {
				return &BoundsError{fmt.Sprintf("a message nested more than %d deep", b.Depth)}
			}
			values++
		case ']', '}':
			depth--
		case ',':
			values++
		default:
			continue
		}
		if values > b.Values {
			return &BoundsError{fmt.Sprintf("a message of more than %d values (JSON array elements and object members)", b.Values)}
		}
	}
	return nil
}

// bytesText is n as "16 MiB" when it is whole MiB, else "N bytes".
func bytesText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
