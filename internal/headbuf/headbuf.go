// Package headbuf keeps the head of a stream: a writer that holds the
// first bytes written to it and drops the rest, for a file's first bytes
// or the start of a command's output without holding all of it.
package headbuf

// Writer keeps the first Max bytes written to it in Bytes; every write
// succeeds whole.
type Writer struct {
	Max   int
	Bytes []byte
}

func (w *Writer) Write(p []byte) (int, error) {
	if room := w.Max - len(w.Bytes); room > 0 {
		w.Bytes = append(w.Bytes, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
