package proc

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/yamux"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/testing/clitest"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// TestConnectMuxParsesEachStream: `connect --mux` serves each stream with
// connect's own flags, read from its first line: an unknown flag, --mux
// itself and a bad first line are each refused on their stream, in one
// error event, and a valid one is served as connect serves a request
// (here: no session, --no-start).
func TestConnectMuxParsesEachStream(t *testing.T) {
	s, _, _ := clitest.Streams(t, nil)
	here, there := net.Pipe()
	s.In, s.Out = there, there
	done := make(chan error, 1)
	go func() {
		cmd := NewCmdConnect(&cmdutil.Factory{Streams: s})
		cmd.SetArgs([]string{"--mux"})
		done <- cmd.Execute()
	}()
	sess, err := yamux.Client(here, nil)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(first string, req string) protocol.Event {
		t.Helper()
		st, err := sess.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		io.WriteString(st, first+"\n"+req)
		line, err := bufio.NewReader(st).ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", first, err)
		}
		var ev protocol.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%s: %q: %v", first, line, err)
		}
		return ev
	}
	status := `{"v": 1, "op": "status"}` + "\n"
	for first, want := range map[string]string{
		`{"args": ["--bogus"]}`: "unknown flag: --bogus",
		`{"args": ["--mux"]}`:   "--mux is not a flag of a multiplexed request",
		`not json`:              "without connect's flags",
		`{"args": ["--no-start", "--session", "q"]}`: `no session "q"`,
	} {
		ev := ask(first, status)
		if ev.Ev != protocol.EvError || !strings.Contains(ev.Message, want) {
			t.Errorf("%s: %+v, want an error with %q", first, ev, want)
		}
	}
	sess.Close()
	if err := <-done; err != nil {
		t.Errorf("connect --mux failed once the connection ended: %v", err)
	}
}
