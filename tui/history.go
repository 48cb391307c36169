package tui

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
)

// maxHistory is how many entries the REPL loads; the file is rewritten to
// that many once it holds twice as many.
const maxHistory = 1000

// history is the inputs run in one workspace, oldest first, kept in a file
// of JSON strings, one a line, so that multi-line entries stay whole and a
// kill at any moment leaves at most a torn last line (skipped on reading).
type history struct {
	path    string
	entries []string
	pos     int    // the entry shown while walking; len(entries): none
	draft   string // the input before the walk began
}

// historyFile is the history file of workspace under dir.
func historyFile(dir, workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])+".jsonl")
}

func loadHistory(path string) *history {
	h := &history{path: path}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var s string
			if json.Unmarshal(sc.Bytes(), &s) == nil {
				h.entries = append(h.entries, s)
			}
		}
		f.Close()
	}
	if len(h.entries) > 2*maxHistory {
		h.entries = h.entries[len(h.entries)-maxHistory:]
		h.rewrite()
	} else if len(h.entries) > maxHistory {
		h.entries = h.entries[len(h.entries)-maxHistory:]
	}
	h.pos = len(h.entries)
	return h
}

// add records an input (not a repeat of the last one) and ends a walk.
func (h *history) add(s string) error {
	h.pos = len(h.entries)
	if s == "" || len(h.entries) > 0 && h.entries[len(h.entries)-1] == s {
		return nil
	}
	h.entries = append(h.entries, s)
	h.pos = len(h.entries)
	if h.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return fmt.Errorf("keep the history: %w", err)
	}
	f, err := os.OpenFile(h.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("keep the history: %w", err)
	}
	defer f.Close()
	line, _ := json.Marshal(s)
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("keep the history: %w", err)
	}
	return nil
}

// rewrite keeps only the entries loaded, replacing the file atomically.
func (h *history) rewrite() {
	var b []byte
	for _, s := range h.entries {
		line, _ := json.Marshal(s)
		b = append(append(b, line...), '\n')
	}
	atomicfile.Write(h.path, b)
}

// back and forward walk the history from the current input; ok is false
// at either end.
func (h *history) back(current string) (string, bool) {
	if h.pos == 0 {
		return "", false
	}
	if h.pos == len(h.entries) {
		h.draft = current
	}
	h.pos--
	return h.entries[h.pos], true
}

func (h *history) forward() (string, bool) {
	if h.pos >= len(h.entries) {
		return "", false
	}
	h.pos++
	if h.pos == len(h.entries) {
		return h.draft, true
	}
	return h.entries[h.pos], true
}
