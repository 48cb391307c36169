package tools

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unicode/utf8"
)

// Output caps of a shell command.
const (
	// MaxSpoolBytes caps each spool file; bytes past it are counted and
	// dropped.
	MaxSpoolBytes = 64 << 20
	// StateHeadBytes and StateTailBytes are how much of each stream a
	// ShellState shows: its start and its end.
	StateHeadBytes = 8 << 10
	StateTailBytes = 24 << 10
)

// spool is one stream of a command's output: written to a file up to a
// cap, and kept in memory only as its first and last bytes.
type spool struct {
	mu    sync.Mutex
	file  *os.File
	limit int64
	total int64  // bytes the command wrote
	head  []byte // the first StateHeadBytes
	tail  []byte // a ring of the last StateTailBytes
	pos   int    // where the ring's next byte goes
	// also, when set, is the log: it gets every byte too.
	also *spool
}

// newSpool creates the spool file at path.
func newSpool(path string, also *spool) (*spool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &spool{file: f, limit: MaxSpoolBytes, also: also}, nil
}

// Write never fails for the command: a full disk loses output, not the
// command.
func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	if room := s.limit - min(s.total, s.limit); room > 0 && s.file != nil {
		s.file.Write(p[:min(int64(len(p)), room)])
	}
	s.total += int64(len(p))
	s.keep(p)
	s.mu.Unlock()
	if s.also != nil {
		s.also.Write(p)
	}
	return len(p), nil
}

// keep records p in the head and the tail ring.
func (s *spool) keep(p []byte) {
	if n := min(len(p), StateHeadBytes-len(s.head)); n > 0 {
		s.head = append(s.head, p[:n]...)
		p = p[n:]
	}
	if len(p) >= StateTailBytes {
		s.tail = append(s.tail[:0], p[len(p)-StateTailBytes:]...)
		s.pos = 0
		return
	}
	for len(p) > 0 {
		if len(s.tail) < StateTailBytes {
			n := min(len(p), StateTailBytes-len(s.tail))
			s.tail = append(s.tail, p[:n]...)
			p = p[n:]
			continue
		}
		n := copy(s.tail[s.pos:], p)
		s.pos = (s.pos + n) % StateTailBytes
		p = p[n:]
	}
}

// tailBytes returns a copy of the tail ring in order.
func (s *spool) tailBytes() []byte {
	return append(append([]byte(nil), s.tail[s.pos:]...), s.tail[:s.pos]...)
}

// text returns what a state shows of the stream (its head, a marker, its
// tail) and how many bytes it leaves out.
func (s *spool) text() (string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tail := s.tailBytes()
	shown := int64(len(s.head) + len(tail))
	if s.total <= shown {
		return strings.ToValidUTF8(string(s.head)+string(tail), "\uFFFD"), 0
	}
	head, whole := trimRunes(s.head, tail)
	cut := s.total - int64(len(head)+len(whole))
	return fmt.Sprintf("%s\n… [%d bytes cut; logs(n) reads lines] …\n%s",
		strings.ToValidUTF8(string(head), "\uFFFD"), cut, strings.ToValidUTF8(string(whole), "\uFFFD")), cut
}

// trimRunes drops a rune cut in two at the end of head and the start of
// tail.
func trimRunes(head, tail []byte) ([]byte, []byte) {
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	if start := len(head) - 1; start >= 0 {
		for start > 0 && start > len(head)-utf8.UTFMax && !utf8.RuneStart(head[start]) {
			start--
		}
		if !utf8.FullRune(head[start:]) {
			head = head[:start]
		}
	}
	return head, tail
}

// written is the bytes the command wrote, kept or not.
func (s *spool) written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

func (s *spool) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
}
