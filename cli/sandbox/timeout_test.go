package sandbox

import (
	"strings"
	"testing"
	"time"
)

// TestParseTimeout: a timeout past the host's bounds is clamped with one
// line saying so; one within them says nothing.
func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		note string
	}{
		{"30s", 30 * time.Second, ""},
		{"90", 90 * time.Second, ""},
		{"", 0, ""},
		{"2h", 35 * time.Minute, "vis-agent: --timeout 2h is outside 3s..35m0s; the block gets 35m0s\n"},
		{"1s", 3 * time.Second, "vis-agent: --timeout 1s is outside 3s..35m0s; the block gets 3s\n"},
	} {
		var stderr strings.Builder
		got, err := parseTimeout(tc.in, &stderr)
		if err != nil || got != tc.want || stderr.String() != tc.note {
			t.Errorf("--timeout %q: %v, %v, %q; want %v, %q", tc.in, got, err, stderr.String(), tc.want, tc.note)
		}
	}
}
