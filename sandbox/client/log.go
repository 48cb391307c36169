package client

import (
	"context"
	"errors"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/journal"
)

// LogEntry is one block as the session's journal keeps it: front ends
// read the journal only through Log.
type LogEntry = journal.Entry

// followEvery is how often Log with follow looks for new blocks.
const followEvery = 200 * time.Millisecond

// Log reads the session's journal (`vis-agent sandbox log`), directly:
// the session need not run. It passes each its latest n blocks (0: all),
// oldest first; with follow it then waits for the journal to exist and
// passes each block as it finishes, until ctx ends. It returns how many
// blocks it passed.
func (s *Session) Log(ctx context.Context, n int, follow bool, each func(LogEntry) error) (int, error) {
	path := s.Folder.JournalFile()
	j, err := journal.OpenRead(path)
	for errors.Is(err, journal.ErrNone) && follow {
		select {
		case <-ctx.Done():
			return 0, nil
		case <-time.After(followEvery):
		}
		j, err = journal.OpenRead(path)
	}
	if errors.Is(err, journal.ErrNone) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer j.Close()
	var last int64
	passed := 0
	for first := true; ; first = false {
		want := 0
		if first {
			want = n
		}
		entries, err := j.Last(want, last)
		if err != nil {
			return passed, err
		}
		for _, e := range entries {
			if err := each(e); err != nil {
				return passed, err
			}
			passed++
			last = e.ID
		}
		if !follow {
			return passed, nil
		}
		select {
		case <-ctx.Done():
			return passed, nil
		case <-time.After(followEvery):
		}
	}
}
