package paths

import (
	"path/filepath"
	"testing"
)

func TestLayout(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	l := New(func(k string) string { return env[k] })
	for got, want := range map[string]string{
		l.Home():                         "/home/u/.vis",
		l.UserConfig():                   "/home/u/.vis/config.toml",
		l.RuntimeRecord():                "/home/u/.vis/python/runtime.json",
		l.SharedPackages():               "/home/u/.vis/python/packages",
		filepath.Join(l.Sessions(), "a"): "/home/u/.vis/sandbox/sessions/a",
		l.Logs():                         "/home/u/.vis/sandbox/logs",
		l.Attachments():                  "/home/u/.vis/sandbox/attachments",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	if got := AttachmentsOf(filepath.Join(l.Sessions(), "a")); got != l.Attachments() {
		t.Errorf("AttachmentsOf a session folder: got %s, want %s", got, l.Attachments())
	}
	env["VIS_HOME"] = "rel"
	env["VIS_PYTHON_PACKAGES"] = "/pkgs"
	if got, want := l.Home(), mustAbs(t, "rel"); got != want {
		t.Errorf("Home with a relative VIS_HOME: got %s, want %s", got, want)
	}
	if got := l.SharedPackages(); got != "/pkgs" {
		t.Errorf("SharedPackages with VIS_PYTHON_PACKAGES: got %s", got)
	}
}

func mustAbs(t *testing.T, p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
