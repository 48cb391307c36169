package headbuf

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestWriter(t *testing.T) {
	w := &Writer{Max: 5}
	n, err := io.Copy(w, strings.NewReader("abc"))
	if n != 3 || err != nil {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	for _, s := range []string{"de", "fgh", ""} {
		if n, err := fmt.Fprint(w, s); n != len(s) || err != nil {
			t.Fatalf("write %q = %d, %v; want the whole write accepted", s, n, err)
		}
	}
	if string(w.Bytes) != "abcde" {
		t.Errorf("kept %q, want %q", w.Bytes, "abcde")
	}
}
