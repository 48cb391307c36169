package tools

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Output caps of shell commands.
const (
	// MaxSpoolBytes caps one command's log on disk (both streams as they
	// came); bytes past it are counted, and the last StateTailBytes kept
	// in memory.
	MaxSpoolBytes = 64 << 20
	// MaxSpoolsBytes caps the logs of a session's commands together
	// (Spools).
	MaxSpoolsBytes = 256 << 20
	// StateHeadBytes and StateTailBytes are how much of each stream a
	// ShellState shows: its start and its end.
	StateHeadBytes = 8 << 10
	StateTailBytes = 24 << 10
)

// Spools is the disk a session's shell output may take: the logs of its
// commands together hold at most max bytes. A log that needs room past it
// takes the place of the oldest logs of commands that ended (deleted:
// their last lines stay in memory); when none is left, its bytes past it
// are only counted. Every set of the session's commands shares it.
type Spools struct {
	mu   sync.Mutex
	max  int64
	used int64
	logs []*spoolFile // on disk, oldest first
}

// NewSpools returns a budget of max bytes of shell output, at most
// (and when max is 0) MaxSpoolsBytes.
func NewSpools(max int64) *Spools {
	if max <= 0 {
		max = MaxSpoolsBytes
	}
	return &Spools{max: min(max, MaxSpoolsBytes)}
}

// spoolFile is one command's log on disk, as the budget counts it (its
// fields are the budget's, under its lock).
type spoolFile struct {
	id, path string
	size     int64
	ended    bool
	// dropped: the file was deleted to make room; full: its bytes were
	// refused for want of room, and none are written after.
	dropped, full bool
	// evicted are the commands whose logs were deleted to make room for
	// this one.
	evicted []string
}

// add counts a new, empty log file of command id.
func (b *Spools) add(id, path string) *spoolFile {
	f := &spoolFile{id: id, path: path}
	b.mu.Lock()
	b.logs = append(b.logs, f)
	b.mu.Unlock()
	return f
}

// take grants f up to want bytes of room, deleting the oldest logs of
// ended commands first when the budget is spent.
func (b *Spools) take(f *spoolFile, want int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f.full || f.dropped {
		return 0
	}
	for i := 0; b.used+want > b.max && i < len(b.logs); {
		old := b.logs[i]
		if !old.ended || old == f {
			i++
			continue
		}
		os.Remove(old.path)
		b.used -= old.size
		old.size, old.dropped = 0, true
		b.logs = append(b.logs[:i], b.logs[i+1:]...)
		f.evicted = append(f.evicted, old.id)
	}
	n := min(want, max(b.max-b.used, 0))
	if n < want {
		f.full = true
	}
	b.used += n
	f.size += n
	return n
}

// end marks f's command ended: its log may make room for others.
func (b *Spools) end(f *spoolFile) {
	b.mu.Lock()
	f.ended = true
	b.mu.Unlock()
}

// release deletes f's file and forgets it: its command is forgotten.
func (b *Spools) release(f *spoolFile) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, l := range b.logs {
		if l == f {
			b.logs = append(b.logs[:i], b.logs[i+1:]...)
			b.used -= f.size
			break
		}
	}
	os.Remove(f.path)
	f.size, f.dropped = 0, true
}

// kept is the size of f's file, and whether it was deleted.
func (b *Spools) kept(f *spoolFile) (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return f.size, f.dropped
}

// note says what of f's log is not on disk, and whose logs were deleted
// for it ("" when all of it is there and none was).
func (b *Spools) note(f *spoolFile, total int64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var notes []string
	switch {
	case f.dropped:
		notes = append(notes, fmt.Sprintf("its output was deleted from disk to make room for newer commands' (a session keeps %s of shell output); logs(n) reads its last lines",
			mib(b.max)))
	case total > f.size:
		notes = append(notes, fmt.Sprintf("its output past %s was not kept on disk (a session keeps %s of shell output, %s of one command's); logs(-n) reads its last lines",
			mib(f.size), mib(b.max), mib(MaxSpoolBytes)))
	}
	if len(f.evicted) > 0 {
		notes = append(notes, fmt.Sprintf("the output of %s was deleted from disk to make room (a session keeps %s of shell output, the newest commands')",
			strings.Join(f.evicted, ", "), mib(b.max)))
	}
	return strings.Join(notes, "; ")
}

// mib is n bytes in MiB, as "16 MiB" or "2.5 MiB".
func mib(n int64) string {
	return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64), ".0") + " MiB"
}

// spool is one stream of a command's output, kept in memory as its
// first and last bytes and, for the log, written to a file within the
// caps.
type spool struct {
	mu     sync.Mutex
	file   *os.File   // nil: in memory only
	disk   *spoolFile // the file, as budget counts it
	budget *Spools
	total  int64  // bytes the command wrote
	head   []byte // the first StateHeadBytes
	tail   []byte // a ring of the last StateTailBytes
	pos    int    // where the ring's next byte goes
	// also, when set, is the log: it gets every byte too.
	also *spool
}

// newLog creates the log file of command id at path, within budget.
func newLog(id, path string, budget *Spools) (*spool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &spool{file: f, disk: budget.add(id, path), budget: budget}, nil
}

// Write never fails for the command: a full disk loses output, not the
// command.
func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.file != nil {
		if want := min(int64(len(p)), MaxSpoolBytes-min(s.total, MaxSpoolBytes)); want > 0 {
			if n := s.budget.take(s.disk, want); n > 0 {
				s.file.Write(p[:n])
			}
		}
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

// close closes the file: its command ended.
func (s *spool) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		s.file.Close()
		s.file = nil
		s.budget.end(s.disk)
	}
}
