package sandbox

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/vis-agent/vis-agent/internal/termtext"
)

// printJSON prints v as JSON (indented by indent unless ""; HTML left as
// it is) that a terminal cannot take for escape sequences
// (termtext.JSON): its strings are a session's, or a remote peer's.
func printJSON(w io.Writer, v any, indent string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termtext.JSON(b.Bytes()))
	return err
}
