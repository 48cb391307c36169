package host

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/journal"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// blockLog is the session's journal as the host writes it: records go
// to a writer of their own, so that no block waits for SQLite (a record
// of a long output takes milliseconds); readers flush first. The journal
// is opened by the first record (a session that runs no block makes
// none).
type blockLog struct {
	path string
	max  int64
	log  io.Writer

	once   sync.Once
	queue  chan journal.Entry
	opened chan struct{} // closed when j or err is set
	j      *journal.Journal
	err    error

	mu      sync.Mutex
	cond    *sync.Cond
	queued  int64
	written int64
}

// logQueue bounds the records waiting for the writer; past it a block
// waits for its record to be queued. logGather is how long the writer
// waits for more records before it writes what it has.
const (
	logQueue  = 64
	logGather = 10 * time.Millisecond
)

func (l *blockLog) start() {
	l.once.Do(func() {
		l.cond = sync.NewCond(&l.mu)
		l.queue = make(chan journal.Entry, logQueue)
		l.opened = make(chan struct{})
		go l.write()
	})
}

func (l *blockLog) write() {
	if l.path == "" {
		l.err = errors.New("this sandbox host keeps no journal")
	} else {
		l.j, l.err = journal.Create(l.path, l.max)
	}
	if l.err != nil {
		fmt.Fprintf(l.log, "vis-agent sandbox host: %v\n", l.err)
	}
	close(l.opened)
	for e := range l.queue {
		// What comes within logGather goes in the same transaction:
		// blocks run back to back (an agent's loop) pay one commit, not
		// one each, and the write keeps out of the way of the next block.
		batch := []journal.Entry{e}
		gather := time.NewTimer(logGather)
	more:
		for len(batch) < logQueue {
			select {
			case e, ok := <-l.queue:
				if !ok {
					break more
				}
				batch = append(batch, e)
			case <-gather.C:
				break more
			}
		}
		gather.Stop()
		if l.j != nil {
			if _, err := l.j.AddAll(batch); err != nil {
				fmt.Fprintf(l.log, "vis-agent sandbox host: %v\n", err)
			}
		}
		l.mu.Lock()
		l.written += int64(len(batch))
		l.cond.Broadcast()
		l.mu.Unlock()
	}
}

// add queues a block's record.
func (l *blockLog) add(e journal.Entry) {
	l.start()
	l.mu.Lock()
	l.queued++
	l.mu.Unlock()
	l.queue <- e
}

// flush waits until every record queued so far is written, and returns
// the journal to read.
func (l *blockLog) flush() (*journal.Journal, error) {
	l.start()
	<-l.opened
	l.mu.Lock()
	want := l.queued
	for l.written < want {
		l.cond.Wait()
	}
	l.mu.Unlock()
	return l.j, l.err
}

// record is one running block as the journal and the live view see it:
// its output is collected as the block's sink sends it.
type record struct {
	h       *Host
	who     *protocol.Client // the block's client (nil: an older one)
	entry   journal.Entry
	out     journal.Output
	started bool // the live view was told of its start (begin)
}

func (h *Host) newRecord(req protocol.Request, started time.Time) *record {
	e := journal.Entry{Code: req.Code, Started: started}
	if c := req.Client; c != nil {
		// the journal names the client: its kind, and its name (an MCP
		// client's) or else its id
		e.Client, e.ClientID = c.Kind, c.Name
		if e.ClientID == "" {
			e.ClientID = c.ID
		}
	}
	return &record{h: h, who: req.Client, entry: e}
}

// begin tells the live view that the block has the session's turn: as
// early as the host knows it runs next, before its Python process is
// asked whether it answers.
func (r *record) begin() {
	r.started = true
	r.h.viewers.send(protocol.Event{Ev: protocol.EvBlock, Kind: protocol.BlockStart, Data: r.entry.Code, Client: r.who}, r.who)
}

// tap sees every event sent to the block's client.
func (r *record) tap(ev protocol.Event) {
	switch ev.Ev {
	case protocol.EvOut:
		r.out.Write(ev.Data)
		r.h.viewers.send(ev, r.who)
	case protocol.EvNote:
		r.h.viewers.send(ev, r.who)
	}
}

// finish records the block's end in the journal and tells the live view.
func (r *record) finish(res protocol.Result) {
	e := &r.entry
	e.Output, e.OutputCut = r.out.Text()
	e.DurationMS = res.DurationMS
	e.RepairNote, e.Notice, e.Attachments = res.RepairNote, res.Notice, res.Attachments
	e.Block = int64(res.Block)
	e.Status = "ok"
	if res.Error != nil {
		e.Error = &journal.Error{Type: res.Error.Type, Message: res.Error.Message}
		switch {
		case res.TimedOut:
			e.Status = "timed out"
		case res.Error.Type == "KeyboardInterrupt":
			e.Status = "interrupted"
		default:
			e.Status = "error"
		}
	}
	r.h.journal.add(*e)
	if r.started {
		r.h.viewers.send(protocol.Event{Ev: protocol.EvBlock, Kind: protocol.BlockEnd, Result: &res, Client: r.who}, r.who)
	}
}

// syncJournal answers a journal request once every block that finished
// is in the journal, which the client then reads itself.
func (h *Host) syncJournal(out *sink) {
	// The snapshot after the last block first: its save may still be
	// owed or under way (answer first, save after).
	h.awaitSaves()
	if _, err := h.journal.flush(); err != nil {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		return
	}
	out.Send(protocol.Event{Ev: protocol.EvOK})
}

// lastBlocks are the session's newest n blocks from the journal (written
// first: readers flush), for read_session() (sandbox/hostcalls.JournalOp).
func (h *Host) lastBlocks(n int) ([]journal.Entry, error) {
	j, err := h.journal.flush()
	if err != nil {
		return nil, err
	}
	return j.Last(n, 0)
}

// close writes what is queued (for a bounded time) and closes the
// journal, when the host stops.
func (l *blockLog) close() {
	l.start()
	done := make(chan struct{})
	go func() {
		if j, _ := l.flush(); j != nil {
			j.Close()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}
