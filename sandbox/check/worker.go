package check

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The parse worker's link: the texts a session's host has parsed in a
// short-lived process of their own (sandbox/host), so that a crafted
// text costs that process, which the kernel bounds, and never the host.
// The host writes each text as a line "KIND LENGTH" and LENGTH bytes; the
// worker answers each with one JSON line, a Parsed, in order.

// Parsed is the worker's answer for one text.
type Parsed struct {
	Problem   *Problem `json:"problem,omitempty"`
	Unchecked string   `json:"unchecked,omitempty"`
}

// maxAnswer bounds an answer's line (a Problem's message is cut at
// maxMessage).
const maxAnswer = 16 << 10

// WriteText sends one text to a worker.
func WriteText(w io.Writer, kind Kind, src string) error {
	if _, err := fmt.Fprintf(w, "%s %d\n", kind, len(src)); err != nil {
		return err
	}
	_, err := io.WriteString(w, src)
	return err
}

// ReadParsed reads a worker's next answer.
func ReadParsed(r *bufio.Reader) (Parsed, error) {
	var p Parsed
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxAnswer {
		return p, errors.New("an answer longer than the limit")
	}
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(line, &p); err != nil {
		return p, fmt.Errorf("a bad answer: %w", err)
	}
	return p, nil
}

// NewAnswerReader is the reader ReadParsed reads a worker's answers from.
func NewAnswerReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, maxAnswer) }

// ServeTexts is the worker: it parses each text r sends with ParseData
// and answers it on w, until r ends.
func ServeTexts(r io.Reader, w io.Writer) error {
	in := bufio.NewReader(r)
	out := json.NewEncoder(w)
	for {
		head, err := in.ReadString('\n')
		if errors.Is(err, io.EOF) && head == "" {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read a text: %w", err)
		}
		var kind Kind
		var n int
		if _, err := fmt.Sscanf(strings.TrimSuffix(head, "\n"), "%s %d", &kind, &n); err != nil || n < 0 || n > maxJSONBytes+len(bom) {
			return fmt.Errorf("a bad text header %q", head)
		}
		src := make([]byte, n)
		if _, err := io.ReadFull(in, src); err != nil {
			return fmt.Errorf("read a text: %w", err)
		}
		var p Parsed
		p.Problem, p.Unchecked = ParseData(kind, string(src))
		if err := out.Encode(p); err != nil {
			return err
		}
	}
}
