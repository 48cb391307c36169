package grant

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/config"
)

// folders makes a workspace, a session folder and two outside folders.
func folders(t *testing.T) (ws, session, out1, out2 string) {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ws/sub", "vis/session", "out1/x", "out2"} {
		if err := os.MkdirAll(filepath.Join(d, f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(d, "ws"), filepath.Join(d, "vis/session"), filepath.Join(d, "out1"), filepath.Join(d, "out2")
}

// settings loads a user config.toml holding text.
func settings(t *testing.T, text string) config.Settings {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	st := config.Load(f)
	if len(st.Problems) > 0 {
		t.Fatalf("config: %v", st.Problems)
	}
	return st
}

func TestDecideSettingsThenAsked(t *testing.T) {
	ws, sess, out1, out2 := folders(t)
	st := settings(t, "[sandbox]\nroots = [\""+out1+"\"]\n")
	p, err := Decide(st, nil, ws, sess)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Jail || !p.Network || p.Hosts != nil || !slices.Equal(p.Roots, []string{out1}) {
		t.Errorf("settings only: %+v", p)
	}
	// Asked: a relative root from Dir, the same root twice is one, an
	// allow list turns the network into the proxy's.
	p, err = Decide(st, &Asked{NoJail: true, Roots: []string{"out1", out1}, ReadOnlyRoots: []string{out2}, AllowHosts: []string{"example.com"}, Dir: filepath.Dir(out1)}, ws, sess)
	if err != nil {
		t.Fatal(err)
	}
	if p.Jail || !p.Network || p.Hosts == nil || !slices.Equal(p.Hosts.Allow, []string{"example.com"}) ||
		!slices.Equal(p.Roots, []string{out1}) || !slices.Equal(p.ReadOnlyRoots, []string{out2}) {
		t.Errorf("asked: %+v %+v", p, p.Hosts)
	}
	if p, err := Decide(st, &Asked{NoNetwork: true}, ws, sess); err != nil || p.Network {
		t.Errorf("--no-network: %+v %v", p, err)
	}
}

// TestDecideRefuses: a root inside what the jailed code can write is
// refused, as the user's usage error when asked on the command line, and
// as a plain error when the settings name it.
func TestDecideRefuses(t *testing.T) {
	ws, sess, out1, _ := folders(t)
	sub := filepath.Join(ws, "sub")
	for _, c := range []struct {
		name  string
		st    config.Settings
		asked *Asked
		want  string
		isAsk bool
	}{
		{"a root in the workspace", settings(t, ""), &Asked{Roots: []string{sub}}, "--root " + sub + ": " + sub + " is inside the workspace", true},
		{"a read-only root in the session", settings(t, ""), &Asked{ReadOnlyRoots: []string{sess}}, "is inside the session's folder", true},
		{"a read-only root in an extra root", settings(t, ""), &Asked{Roots: []string{out1}, ReadOnlyRoots: []string{filepath.Join(out1, "x")}}, "is inside the root " + out1, true},
		{"the settings' root in the workspace", settings(t, "[sandbox]\nroots = [\""+sub+"\"]\n"), nil, "config.toml:2: sandbox.roots: " + sub + " is inside the workspace", false},
		{"no network and an allow list", settings(t, ""), &Asked{NoNetwork: true, AllowHosts: []string{"a.example"}}, "contradict", true},
		{"a bad host pattern", settings(t, ""), &Asked{AllowHosts: []string{"a b"}}, "--allow-host", true},
	} {
		_, err := Decide(c.st, c.asked, ws, sess)
		var asked AskedError
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, &asked) != c.isAsk {
			t.Errorf("%s: %v (asked %v), want %q (asked %v)", c.name, err, errors.As(err, &asked), c.want, c.isAsk)
		}
	}
}
