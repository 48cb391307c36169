package host

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/journal"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// blockLog is the session's journal as the host writes it: opened once,
// on a block's start (a session that runs no block makes none).
type blockLog struct {
	path string
	max  int64

	once sync.Once
	j    *journal.Journal
	err  error
}

func (l *blockLog) get() (*journal.Journal, error) {
	l.once.Do(func() {
		if l.path == "" {
			l.err = fmt.Errorf("this sandbox host keeps no journal")
			return
		}
		l.j, l.err = journal.Create(l.path, l.max)
	})
	return l.j, l.err
}

// record is one running block as the journal and the live view see it:
// its output is collected as the block's sink sends it.
type record struct {
	h       *Host
	entry   journal.Entry
	out     journal.Output
	started bool // the live view was told of its start
}

func (h *Host) newRecord(req protocol.Request, started time.Time) *record {
	return &record{h: h, entry: journal.Entry{Client: req.Client, ClientID: req.ClientID, Code: req.Code, Started: started}}
}

// tap sees every event sent to the block's client.
func (r *record) tap(ev protocol.Event) {
	switch ev.Ev {
	case "started":
		r.started = true
		r.h.viewers.send(protocol.Event{Ev: "block", Kind: "start", Data: r.entry.Code, Client: r.entry.Client,
			ClientID: r.entry.ClientID}, r.entry.Client, r.entry.ClientID)
	case "out":
		r.out.Write(ev.Data)
		r.h.viewers.send(ev, r.entry.Client, r.entry.ClientID)
	case "note":
		r.h.viewers.send(ev, r.entry.Client, r.entry.ClientID)
	}
}

// finish records the block's end in the journal and tells the live view.
func (r *record) finish(res protocol.Result) {
	e := &r.entry
	e.Output, e.OutputCut = r.out.Text()
	e.DurationMS = res.DurationMS
	e.RepairNote, e.Notice, e.Attachments = res.RepairNote, res.Notice, res.Attachments
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
	if j, err := r.h.journal.get(); err == nil {
		_, err = j.Add(*e)
		if err != nil {
			fmt.Fprintf(r.h.cfg.Log, "vis-agent sandbox host: %v\n", err)
		}
	} else {
		fmt.Fprintf(r.h.cfg.Log, "vis-agent sandbox host: %v\n", err)
	}
	if r.started {
		r.h.viewers.send(protocol.Event{Ev: "block", Kind: "end", Result: &res, Client: e.Client, ClientID: e.ClientID},
			e.Client, e.ClientID)
	}
}

// readJournal answers a journal request: the newest blocks, as JSON.
func (h *Host) readJournal(req protocol.Request, out *sink) {
	j, err := h.journal.get()
	if err != nil {
		out.Send(protocol.Event{Ev: "error", Message: err.Error()})
		return
	}
	n := req.N
	if n <= 0 || n > maxJournalRead {
		n = min(max(n, 20), maxJournalRead)
	}
	entries, err := j.Last(n, req.After)
	if err != nil {
		out.Send(protocol.Event{Ev: "error", Message: err.Error()})
		return
	}
	if entries == nil {
		entries = []journal.Entry{}
	}
	data, err := json.Marshal(entries)
	if err != nil {
		out.Send(protocol.Event{Ev: "error", Message: err.Error()})
		return
	}
	out.Send(protocol.Event{Ev: "journal", Data: string(data)})
}

// maxJournalRead bounds the blocks one journal request reads: each may
// hold MaxOutput of output.
const maxJournalRead = 200

// journalOp is read_session(n) of the session's code: its newest blocks
// from the journal, which the jailed code cannot open itself.
func (h *Host) journalOp(ctx context.Context, args json.RawMessage) (reply, error) {
	var in struct {
		N int `json:"n"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return reply{}, err
	}
	if in.N < 1 || in.N > maxJournalRead {
		return reply{}, errorf("ValueError", "n is how many of the latest blocks to read, 1 to %d, not %d", maxJournalRead, in.N)
	}
	j, err := h.journal.get()
	if err != nil {
		return reply{}, errorf("RuntimeError", "%v", err)
	}
	entries, err := j.Last(in.N, 0)
	if err != nil {
		return reply{}, errorf("RuntimeError", "%v", err)
	}
	if entries == nil {
		entries = []journal.Entry{}
	}
	return reply{result: entries}, nil
}
