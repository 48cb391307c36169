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
	if !p.Jail || p.NetworkText() != "allow pypi.org, files.pythonhosted.org" || !slices.Equal(p.Roots, []string{out1}) {
		t.Errorf("settings only: %+v", p)
	}
	// Asked: a relative root from Dir, the same root twice is one, an
	// allow list adds to the settings' one.
	p, err = Decide(st, &Asked{NoJail: true, Roots: []string{"out1", out1}, ReadOnlyRoots: []string{out2}, AllowHosts: []string{"example.com"}, Dir: filepath.Dir(out1)}, ws, sess)
	if err != nil {
		t.Fatal(err)
	}
	if p.Jail || p.NetworkText() != "allow pypi.org, files.pythonhosted.org, example.com" ||
		!slices.Equal(p.Roots, []string{out1}) || !slices.Equal(p.ReadOnlyRoots, []string{out2}) {
		t.Errorf("asked: %+v %+v", p, p.Hosts)
	}
}

// TestDecideNetwork: the allow list of the package index the user's
// config names unless the settings or the flags say otherwise.
func TestDecideNetwork(t *testing.T) {
	ws, sess, _, _ := folders(t)
	mirror := "[python]\nindex_url = \"http://127.0.0.1:8080/simple\"\n"
	for _, c := range []struct {
		config string
		asked  *Asked
		want   string
	}{
		{"", nil, "allow pypi.org, files.pythonhosted.org"},
		{"", &Asked{}, "allow pypi.org, files.pythonhosted.org"},
		{mirror, nil, "allow 127.0.0.1:8080, files.pythonhosted.org"},
		{"[python]\nindex_url = \"file:///srv/simple\"\n", nil, "allow nothing"},
		{"", &Asked{Network: "on"}, "on"},
		{"", &Asked{Network: "off"}, "off"},
		{"", &Asked{NoNetwork: true}, "off"},
		{"", &Asked{NoNetwork: true, Network: "off"}, "off"},
		{"", &Asked{AllowHosts: []string{"a.example"}, DenyHosts: []string{"files.pythonhosted.org"}},
			"allow pypi.org, files.pythonhosted.org, a.example (deny files.pythonhosted.org)"},
		{"[sandbox]\nnetwork = \"on\"\n", nil, "on"},
		{"[sandbox]\nnetwork = true\n", nil, "on"},
		{"[sandbox]\nnetwork = \"on\"\n", &Asked{Network: "allow"}, "allow pypi.org, files.pythonhosted.org"},
		{"[sandbox]\nnetwork = \"on\"\n", &Asked{AllowHosts: []string{"a.example"}}, "allow pypi.org, files.pythonhosted.org, a.example"},
		{"[sandbox]\nnetwork = false\n", &Asked{AllowHosts: []string{"a.example"}}, "allow pypi.org, files.pythonhosted.org, a.example"},
		{"[sandbox]\nnetwork = false\n", &Asked{Network: "on"}, "on"},
		{"[sandbox]\nallow_hosts = [\"a.example\"]\n", nil, "allow a.example"},
		{"[sandbox]\nallow_hosts = [\"@pypi\", \"a.example\"]\n" + mirror, nil, "allow 127.0.0.1:8080, files.pythonhosted.org, a.example"},
	} {
		p, err := Decide(settings(t, c.config), c.asked, ws, sess)
		if err != nil || p.NetworkText() != c.want {
			t.Errorf("%q %+v: %q %v, want %q", c.config, c.asked, p.NetworkText(), err, c.want)
		}
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
		{"network off and an allow list", settings(t, ""), &Asked{Network: "off", AllowHosts: []string{"a.example"}}, "contradict", true},
		{"network on and an allow list", settings(t, ""), &Asked{Network: "on", AllowHosts: []string{"a.example"}}, "--network on reaches every host", true},
		{"no network and network on", settings(t, ""), &Asked{NoNetwork: true, Network: "on"}, "--no-network and --network on contradict", true},
		{"a bad network mode", settings(t, ""), &Asked{Network: "yes"}, `--network "yes": give on, off or allow`, true},
		{"a bad pattern in the settings", settings(t, "[sandbox]\nallow_hosts = [\"a b\"]\n"), nil, "config.toml:2: sandbox.allow_hosts: host pattern", false},
		{"a bad host pattern", settings(t, ""), &Asked{AllowHosts: []string{"a b"}}, "--allow-host", true},
	} {
		_, err := Decide(c.st, c.asked, ws, sess)
		var asked AskedError
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, &asked) != c.isAsk {
			t.Errorf("%s: %v (asked %v), want %q (asked %v)", c.name, err, errors.As(err, &asked), c.want, c.isAsk)
		}
	}
}
