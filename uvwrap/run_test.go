package uvwrap

import (
	"reflect"
	"strings"
	"testing"
)

func TestEnviron(t *testing.T) {
	get := func(env []string, name string) []string {
		var vals []string
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				vals = append(vals, v)
			}
		}
		return vals
	}
	env := Environ([]string{"PATH=/bin", "UV_PYTHON=", "UV_INDEX_URL="}, "/py/bin/python3.12", "https://mirror/simple")
	for name, want := range map[string]string{
		"UV_PYTHON": "/py/bin/python3.12", "UV_PYTHON_DOWNLOADS": "never", "UV_DEFAULT_INDEX": "https://mirror/simple", "PATH": "/bin",
	} {
		// Exactly one value: an empty one left first would be what uv reads.
		if got := get(env, name); !reflect.DeepEqual(got, []string{want}) {
			t.Errorf("%s = %q, want [%q]", name, got, want)
		}
	}
	env = Environ([]string{"UV_PYTHON=3.11", "UV_PYTHON_DOWNLOADS=automatic", "UV_INDEX_URL=https://mine/simple"}, "/py/bin/python3.12", "https://mirror/simple")
	if got := get(env, "UV_PYTHON"); !reflect.DeepEqual(got, []string{"3.11"}) {
		t.Errorf("the user's UV_PYTHON replaced: %q", got)
	}
	if got := get(env, "UV_PYTHON_DOWNLOADS"); !reflect.DeepEqual(got, []string{"automatic"}) {
		t.Errorf("the user's UV_PYTHON_DOWNLOADS replaced: %q", got)
	}
	if got := get(env, "UV_DEFAULT_INDEX"); got != nil {
		t.Errorf("UV_DEFAULT_INDEX set although UV_INDEX_URL is: %q", got)
	}
	if got := get(Environ(nil, "/py", ""), "UV_DEFAULT_INDEX"); got != nil {
		t.Errorf("UV_DEFAULT_INDEX without a configured index: %q", got)
	}
}

func TestParseSyncArgs(t *testing.T) {
	sa, err := ParseSyncArgs([]string{"--frozen", "--extra", "fast", "--group=hooks", "-f", "/w", "--find-links=/w2", "--offline", "--project", "app", "--directory=d", "-q", "--no-editable"})
	if err != nil {
		t.Fatal(err)
	}
	wantExport := []string{"--frozen", "--extra", "fast", "--group", "hooks", "--find-links", "/w", "--find-links", "/w2", "--offline", "--project", "app", "--quiet", "--no-editable"}
	wantInstall := []string{"--find-links", "/w", "--find-links", "/w2", "--offline", "--quiet"}
	if !reflect.DeepEqual(sa.Export, wantExport) || !reflect.DeepEqual(sa.Install, wantInstall) || sa.Project != "app" || sa.Directory != "d" {
		t.Errorf("ParseSyncArgs = %+v", sa)
	}
	if sa, err := ParseSyncArgs([]string{"--locked", "--help", "--bogus"}); err != nil || !sa.Help {
		t.Errorf("--help: %+v, %v", sa, err)
	}
	for args, want := range map[string]string{
		"--python 3.12": "does not take --python",
		"extra":         "does not take extra",
		"--extra":       "--extra needs a value",
		"--frozen=yes":  "--frozen takes no value",
		"-x":            "does not take -x",
	} {
		_, err := ParseSyncArgs(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSyncArgs(%s) = %v, want %q", args, err, want)
		}
	}
}

func TestSyncDirs(t *testing.T) {
	for _, tt := range []struct {
		directory, project, base, root string
	}{
		{"", "", "/cwd", "/cwd"},
		{"sub", "", "/cwd/sub", "/cwd/sub"},
		{"", "app", "/cwd", "/cwd/app"},
		{"/abs", "app", "/abs", "/abs/app"},
		{"sub", "/abs/app", "/cwd/sub", "/abs/app"},
		{"/abs/", "/abs/app/", "/abs", "/abs/app"},
	} {
		base, root := SyncArgs{Directory: tt.directory, Project: tt.project}.Dirs("/cwd")
		if base != tt.base || root != tt.root {
			t.Errorf("--directory %q --project %q: %s %s, want %s %s", tt.directory, tt.project, base, root, tt.base, tt.root)
		}
	}
}
