package runpath

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// runpath.c speaks the protocol of package protocol.
func TestRunPathProtocol(t *testing.T) {
	if ProtocolVersion != strconv.Itoa(protocol.Version) {
		t.Errorf("runpath.h's version %s, protocol.Version %d", ProtocolVersion, protocol.Version)
	}
	if MaxLine != protocol.MaxLine || MaxLineText != strconv.Itoa(protocol.MaxLine) {
		t.Errorf("runpath.h's longest message %d (%s), protocol.MaxLine %d", MaxLine, MaxLineText, protocol.MaxLine)
	}
}

// A run plan holds the request without its opening brace, under the name
// runpath.c computes; a request that is not an object is not saved.
func TestSave(t *testing.T) {
	dir := t.TempDir()
	p := Plan{Workspace: "/w", Environ: []string{"A=1"}, Args: []string{"--session", "s", "-c"},
		Socket: "/s/sock", Key: "/s/key", Request: []byte(`{"v":1,"op":"run"}`)}
	if err := Save(dir, p); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "runpath", planName(p.Workspace, p.Environ, p.Args)))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Split(string(data), "\x00")
	want := []string{"vis-runpath-2", "/w"}
	if fields[0] != want[0] || fields[1] != want[1] || !strings.Contains(string(data), "\x00/s/sock\x00/s/key\x00\x00\x00\"v\":1,\"op\":\"run\"}\x00end\x00") {
		t.Errorf("plan %q", data)
	}
	p.Header, p.URL = `{"args":["--session","s"]}`, "ssh://h"
	if err := Save(dir, p); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(dir, "runpath", planName(p.Workspace, p.Environ, p.Args)))
	if !strings.Contains(string(data), "\x00/s/key\x00{\"args\":[\"--session\",\"s\"]}\x00ssh://h\x00\"v\":1,") {
		t.Errorf("a remote session's plan %q", data)
	}
	p.Request = []byte("null")
	if Save(dir, p) == nil {
		t.Error("a request that is not an object was saved")
	}
}
