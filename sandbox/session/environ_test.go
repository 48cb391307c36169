package session

import (
	"slices"
	"testing"
)

func TestEnviron(t *testing.T) {
	got := Environ([]string{"PATH=/home/u/bin:/usr/bin", "HOME=/home/u", "LANG=de_DE.UTF-8", "LC_ALL=de_DE.UTF-8",
		"TZ=Asia/Tokyo", "PYTHONPATH=/x", "OPENAI_API_KEY=secret", "VIS_HOME=/first", "VIS_ENV_IDLE_TTL_MS=5", "USER=u", "bad", "VIS_HOME=/v"})
	want := []string{"HOME=/home/u", "LANG=C.UTF-8", "PATH=" + SessionPath, "USER=u", "VIS_ENV_IDLE_TTL_MS=5", "VIS_HOME=/v"}
	if !slices.Equal(got, want) {
		t.Errorf("Environ:\n got %q\nwant %q", got, want)
	}
}
