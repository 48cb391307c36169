package connect

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// answer runs Serve on one request line and returns the events it
// answered and its error.
func answer(t *testing.T, request string, o Options) ([]protocol.Event, error) {
	t.Helper()
	var out strings.Builder
	err := Serve(strings.NewReader(request), &out, o)
	var events []protocol.Event
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var ev protocol.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		events = append(events, ev)
	}
	return events, err
}

// refuse is a session lookup a test must not reach.
func refuse(t *testing.T) Options {
	return Options{
		Existing: func() (*client.Session, error) { t.Error("the session was looked up"); return nil, errors.New("no") },
		Open: func() (*client.Session, protocol.Policy, error) {
			t.Error("the session was opened")
			return nil, protocol.Policy{}, errors.New("no")
		},
		Sessions: t.TempDir(), Version: "v-test",
	}
}

func TestServeEmptyInput(t *testing.T) {
	if events, err := answer(t, "", refuse(t)); err != nil || len(events) != 0 {
		t.Errorf("a client that left before asking: %v, %+v", err, events)
	}
}

// A client of another protocol version is answered in one error naming
// both versions and this side's vis-agent, and nothing is looked up.
func TestServeOtherVersion(t *testing.T) {
	events, err := answer(t, `{"v": 999, "op": "status"}`+"\n", refuse(t))
	if !errors.Is(err, ErrAnswered) || len(events) != 1 || events[0].Ev != protocol.EvError ||
		!strings.Contains(events[0].Message, "version 999") || !strings.Contains(events[0].Message, "vis-agent v-test") {
		t.Errorf("version 999: %v, %+v", err, events)
	}
}

// list is answered from this machine's sessions folder, without a session.
func TestServeList(t *testing.T) {
	req, _ := json.Marshal(protocol.Request{V: protocol.Version, Op: protocol.OpList})
	events, err := answer(t, string(req)+"\n", refuse(t))
	if err != nil || len(events) != 1 || events[0].Ev != protocol.Ev(protocol.OpList) || events[0].Data != "[]" {
		t.Errorf("list of no sessions: %v, %+v", err, events)
	}
}

// A session that cannot be found is answered as an error, with the kind
// a client tells "not running" by.
func TestServeNotRunning(t *testing.T) {
	o := refuse(t)
	o.NoStart = true
	o.Existing = func() (*client.Session, error) { return nil, client.ErrNotRunning }
	req, _ := json.Marshal(protocol.Request{V: protocol.Version, Op: protocol.OpStatus})
	events, err := answer(t, string(req)+"\n", o)
	if !errors.Is(err, ErrAnswered) || len(events) != 1 || events[0].Kind != protocol.KindNotRunning {
		t.Errorf("no host: %v, %+v", err, events)
	}
}
