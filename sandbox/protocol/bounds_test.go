package protocol

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// shapes are the messages of about n bytes that cost a JSON decoder the
// most for their size, each a field a child can send.
func shapes(n int) map[string][]byte {
	rep := func(head, unit, tail string) []byte {
		return []byte(head + strings.Repeat(unit, (n-len(head)-len(tail))/len(unit)) + tail + "\n")
	}
	return map[string][]byte{
		"written: empty strings":     rep(`{"ev":"result","result":{"written":[`, `"",`, `""]}}`),
		"history: small numbers":     rep(`{"ev":"history","history":{"line":[`, `0,`, `0]}}`),
		"checks: empty objects":      rep(`{"ev":"result","result":{"checks":[`, `{},`, `{}]}}`),
		"unknown: nested arrays":     rep(`{"ev":"out","x":[`, `[],`, `[]]}`),
		"unknown: object members":    rep(`{"ev":"out","x":{`, `"":0,`, `"":0}}`),
		"syntax: deep objects":       []byte(`{"ev":"result","syntax":` + strings.Repeat(`{"a":`, 9000) + `1` + strings.Repeat(`}`, 9000) + "}\n"),
		"data: one string":           rep(`{"ev":"out","data":"`, `x`, `"}`),
		"data: escapes":              rep(`{"ev":"out","data":"`, `\u00e9`, `"}`),
		"preload: one-letter names":  rep(`{"ev":"saved","result":{"preload":[`, `"a",`, `"a"]}}`),
		"attachments: empty objects": rep(`{"ev":"result","result":{"attachments":[`, `{},`, `{}]}}`),
	}
}

// decodeCost is what receiving line within b allocates (bytes: an upper
// bound of the peak), and its error.
func decodeCost(line []byte, b Bounds) (uint64, error) {
	c := NewConn(bytes.NewReader(line), nil).Bound(b)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var ev Event
	err := c.Receive(&ev)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

// TestChildDecodeBounded: a child's message of the child link's longest
// line costs its host at most 4 times its bytes (twice to read it, once more for its strings, a little more when they hold escapes) to read, whatever its
// shape: one past the bounds is refused before it is decoded. Without the
// bounds (the line alone), the same lines cost up to 10 times.
func TestChildDecodeBounded(t *testing.T) {
	// Without the bounds, a 1 MiB line of each shape (its cost grows with
	// its length).
	unbounded := Bounds{Line: MaxLine, Values: 1 << 40, Depth: 1 << 20}
	small := shapes(1 << 20)
	for name, line := range shapes(MaxChildLine - 1) {
		before, _ := decodeCost(small[name], unbounded)
		cost, err := decodeCost(line, ChildBounds)
		t.Logf("%-28s unbounded: %4.1f× its line; bounded: %4.1f MiB for a %4.1f MiB line (%v)", name,
			float64(before)/float64(len(small[name])), mib(int(cost)), mib(len(line)), err)
		if cost > 4*uint64(len(line)) {
			t.Errorf("%s: %.1f MiB for a %.1f MiB line", name, mib(int(cost)), mib(len(line)))
		}
		var be *BoundsError
		if strings.HasPrefix(name, "data:") != (err == nil) || err != nil && !errors.As(err, &be) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mib(n int) float64 { return float64(n) / (1 << 20) }

// TestBoundsCheck: values and depth are counted outside strings only, an
// escaped quote does not end a string, and a line too long is refused.
func TestBoundsCheck(t *testing.T) {
	b := Bounds{Line: 64, Values: 4, Depth: 2}
	for _, tc := range []struct {
		in   string
		want string
	}{
		{`{"a":[1,2],"b":2}`, ""},
		{`{"a":"[[[[,,,,,,\"[[[,,,,\\"}`, ""},
		{`{"a":[1,2,3],"b":2}`, "more than 4 values"},
		{`{"a":[[1]]}`, "nested more than 2 deep"},
		{`{"a":"` + strings.Repeat("x", 70) + `"}`, "longer than 64 bytes"},
	} {
		var ev Event
		err := NewConn(strings.NewReader(tc.in+"\n"), nil).Bound(b).Receive(&ev)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}
