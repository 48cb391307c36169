package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	c := NewConn(&buf, &buf)
	big := strings.Repeat("x", 1<<20) // longer than the reader's buffer
	if err := c.Send(Request{V: Version, Op: "run", Code: big}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(Event{Ev: "out", Stream: "stdout", Data: "é\n"}); err != nil {
		t.Fatal(err)
	}
	req, err := c.ReceiveRequest()
	if err != nil || req.Op != "run" || req.Code != big {
		t.Fatalf("request: %v %q", err, req.Op)
	}
	var ev Event
	if err := c.Receive(&ev); err != nil || ev.Data != "é\n" {
		t.Fatalf("event: %v %+v", err, ev)
	}
	if err := c.Receive(&ev); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v, want EOF", err)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"v":2,"op":"run"}` + "\n", "protocol version 2"},
		{"not json\n", "malformed"},
		{`{"v":1,"op":"run"`, "unexpected EOF"},
	} {
		_, err := NewConn(strings.NewReader(tc.in), io.Discard).ReceiveRequest()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestPolicy(t *testing.T) {
	a := Policy{Jail: true, Network: true, MaxThreads: 64, MemoryMB: 4096}
	if got, want := a.String(), "jail on, network on, 64 threads, 4096 MB"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	b := a
	b.Roots = []string{"/data"}
	if a.Equal(b) || !a.Equal(a) {
		t.Errorf("Equal: a root more must differ, the same policy must not")
	}
	if got := (Policy{ReadOnlyRoots: []string{"/x"}}).String(); got != "jail off, network off, 1 extra root" {
		t.Errorf("String() = %q", got)
	}
}

// The shim reads an answer's id and size by position: they come first.
func TestCallAnswerStartsWithIDAndSize(t *testing.T) {
	for _, a := range []CallAnswer{
		{ID: 7, Size: 3, OK: true, Result: map[string]any{"a": 1}},
		{ID: 0, Error: &CallError{Type: "ValueError", Message: "bad"}},
		{ID: 1 << 60, Size: 1 << 32},
	} {
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"id":%d,"size":%d,`, a.ID, a.Size); !strings.HasPrefix(string(b), want) {
			t.Errorf("%s does not start with %s", b, want)
		}
	}
}

func TestClampTimeout(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		0: DefaultTimeout, time.Second: MinTimeout, time.Minute: time.Minute, time.Hour: MaxTimeout,
	} {
		if got := ClampTimeout(in); got != want {
			t.Errorf("ClampTimeout(%s) = %s, want %s", in, got, want)
		}
	}
}
