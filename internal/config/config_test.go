package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadMerge(t *testing.T) {
	dir := t.TempDir()
	user := writeFile(t, filepath.Join(dir, "home", "config.toml"), `
[python]
source_paths = ["lib"]
index_url = "https://mirror.example/simple"
tls_strict = false
`)
	project := writeFile(t, filepath.Join(dir, "proj", "vis.toml"), `python.source_paths = ["src", "/abs"]
`)
	s := Load(user, project, filepath.Join(dir, "missing.toml"))
	if len(s.Problems) != 0 {
		t.Fatalf("problems: %q", s.Problems)
	}
	if want := []string{filepath.Join(dir, "proj", "src"), "/abs"}; !reflect.DeepEqual(s.SourcePaths.Value, want) {
		t.Errorf("source_paths = %q, want %q (the project's, relative to its file)", s.SourcePaths.Value, want)
	}
	if s.SourcePaths.From != project+":1" {
		t.Errorf("source_paths from %q", s.SourcePaths.From)
	}
	if s.IndexURL.Value != "https://mirror.example/simple" || s.IndexURL.From != user+":4" {
		t.Errorf("index_url = %+v", s.IndexURL)
	}
	if s.TLSStrict.Value || s.TLSStrict.From != user+":5" {
		t.Errorf("tls_strict = %+v", s.TLSStrict)
	}
	if !reflect.DeepEqual(s.Files, []string{user, project}) {
		t.Errorf("files = %q", s.Files)
	}
}

func TestLoadDefaults(t *testing.T) {
	s := Load(filepath.Join(t.TempDir(), "none.toml"))
	if !s.TLSStrict.Value || s.TLSStrict.From != "default" || s.IndexURL.Value != "" || len(s.SourcePaths.Value) != 0 || len(s.Problems) != 0 {
		t.Errorf("defaults = %+v", s)
	}
}

func TestLoadProblems(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "vis.toml"), `# comment
[python]
source_paths = "src"
tls_strict = 1
index_url = "https://me:secret@mirror.example/simple"
colour = "blue"
tls_strict_extra = true

[tool]
x = 1
`)
	s := Load(f)
	want := []string{
		f + ":3: python.source_paths: must be a list of strings, not a string (the setting is ignored)",
		f + ":4: python.tls_strict: must be true or false, not an integer (the setting is ignored)",
		f + ":5: python.index_url: must not hold credentials; keep them in pip's or uv's own configuration (netrc, keyring) (the setting is ignored)",
		f + ":6: python.colour: unknown key (the setting is ignored)",
		f + ":7: python.tls_strict_extra: unknown key (the setting is ignored)",
		f + ":9: tool: unknown key (the setting is ignored)",
	}
	if !reflect.DeepEqual(s.Problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(s.Problems, "\n"), strings.Join(want, "\n"))
	}
	// Broken entries fall back to the defaults.
	if !s.TLSStrict.Value || s.IndexURL.Value != "" || s.SourcePaths.Value != nil {
		t.Errorf("settings after problems = %+v", s)
	}
}

func TestLoadBrokenFile(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, filepath.Join(dir, "config.toml"), "[python]\ntls_strict = false\nsource_paths = [\n")
	good := writeFile(t, filepath.Join(dir, "vis.toml"), "[python]\nindex_url = \"http://mirror.local/simple\"\n")
	s := Load(bad, good)
	if len(s.Problems) != 1 || !strings.HasPrefix(s.Problems[0], bad+":") || !strings.Contains(s.Problems[0], "not valid TOML") || !strings.HasSuffix(s.Problems[0], "(the file is ignored)") {
		t.Errorf("problems = %q", s.Problems)
	}
	if !s.TLSStrict.Value || s.IndexURL.Value != "http://mirror.local/simple" {
		t.Errorf("a broken file must be ignored whole, the others read: %+v", s)
	}
	for _, u := range []string{"ftp://x/simple", "mirror.example/simple", "https://", "file://server/simple", "file:simple"} {
		if checkIndexURL(u) == "" {
			t.Errorf("index_url %q accepted", u)
		}
	}
	// A local index (install() asks it also without the network).
	if p := checkIndexURL("file:///srv/simple"); p != "" {
		t.Errorf("index_url file:///srv/simple refused: %s", p)
	}
}

func TestSandboxSettings(t *testing.T) {
	dir := t.TempDir()
	user := writeFile(t, filepath.Join(dir, "home", "config.toml"), `
[sandbox]
jail = false
network = false
max_threads = 8
memory_mb = 0
roots = ["scratch", "/data"]
max_attachment_mb = 10
read_only_roots = ["/ref"]
allow_builds = true
fix_files = true
max_attachments_mb = 500
max_value_mb = 32
max_snapshot_mb = 64
attach_figures = false
journal_mb = 3
max_disk_mb = 512
history_blocks = 7
`)
	s := Load(user)
	if len(s.Problems) != 0 {
		t.Fatalf("problems: %q", s.Problems)
	}
	if s.SandboxJail.Value || s.SandboxNetwork.Value || s.SandboxMaxThreads.Value != 8 || s.SandboxMemoryMB.Value != 0 {
		t.Errorf("settings: %+v", s)
	}
	if want := []string{filepath.Join(dir, "home", "scratch"), "/data"}; !reflect.DeepEqual(s.SandboxRoots.Value, want) {
		t.Errorf("roots = %q, want %q", s.SandboxRoots.Value, want)
	}
	if s.SandboxMaxAttachmentMB.Value != 10 || s.SandboxMaxAttachmentMB.From != user+":8" {
		t.Errorf("max_attachment_mb %+v", s.SandboxMaxAttachmentMB)
	}
	if !s.SandboxFixFiles.Value || s.SandboxFixFiles.From != user+":11" {
		t.Errorf("fix_files %+v", s.SandboxFixFiles)
	}
	if !s.SandboxAllowBuilds.Value || s.SandboxAllowBuilds.From != user+":10" {
		t.Errorf("allow_builds %+v", s.SandboxAllowBuilds)
	}
	if s.SandboxMaxAttachmentsMB.Value != 500 || s.SandboxMaxAttachmentsMB.File() != user {
		t.Errorf("max_attachments_mb %+v", s.SandboxMaxAttachmentsMB)
	}
	if s.SandboxMaxThreads.From != user+":5" {
		t.Errorf("max_threads from %q", s.SandboxMaxThreads.From)
	}
	if s.SandboxMaxValueMB.Value != 32 || s.SandboxMaxSnapshotMB.Value != 64 || s.SandboxAttachFigures.Value || s.SandboxAttachFigures.From != user+":15" {
		t.Errorf("snapshot and figure settings: %+v %+v %+v", s.SandboxMaxValueMB, s.SandboxMaxSnapshotMB, s.SandboxAttachFigures)
	}

	if s.SandboxJournalMB.Value != 3 || s.SandboxJournalMB.From != user+":16" {
		t.Errorf("journal_mb %+v", s.SandboxJournalMB)
	}

	if s.SandboxMaxDiskMB.Value != 512 || s.SandboxMaxDiskMB.From != user+":17" {
		t.Errorf("max_disk_mb %+v", s.SandboxMaxDiskMB)
	}
	if s.SandboxHistoryBlocks.Value != 7 || s.SandboxHistoryBlocks.From != user+":18" {
		t.Errorf("history_blocks %+v", s.SandboxHistoryBlocks)
	}

	d := Load()
	if d.SandboxJournalMB.Value != 64 || d.SandboxMaxDiskMB.Value != 2048 || d.SandboxHistoryBlocks.Value != 50 {
		t.Errorf("journal_mb and max_disk_mb defaults %+v %+v", d.SandboxJournalMB, d.SandboxMaxDiskMB)
	}
	if !d.SandboxJail.Value || !d.SandboxNetwork.Value || d.SandboxAllowBuilds.Value || d.SandboxMaxThreads.Value != 64 || d.SandboxMemoryMB.Value != 4096 || d.SandboxMaxAttachmentMB.Value != 64 ||
		d.SandboxMaxAttachmentsMB.Value != 1024 || d.SandboxMaxAttachmentsMB.File() != "" {
		t.Errorf("defaults: %+v", d)
	}
	if d.SandboxMaxValueMB.Value != 256 || d.SandboxMaxSnapshotMB.Value != 1024 || !d.SandboxAttachFigures.Value {
		t.Errorf("snapshot and figure defaults: %+v", d)
	}
	// The network's default is the allow list of the package index.
	if !d.SandboxNetworkAllow.Value || !reflect.DeepEqual(d.SandboxAllowHosts.Value, []string{"@pypi"}) || d.SandboxAllowHosts.File() != "" {
		t.Errorf("network defaults: %+v %+v", d.SandboxNetworkAllow, d.SandboxAllowHosts)
	}

	bad := writeFile(t, filepath.Join(dir, "bad", "config.toml"), `
[sandbox]
jail = "no"
max_threads = 0
memory_mb = 1024
roots = [""]
colour = 1
max_attachment_mb = 0
max_attachments_mb = -1
max_value_mb = 0
attach_figures = "yes"
journal_mb = 0
max_disk_mb = 10
history_blocks = -1
`)
	project := writeFile(t, filepath.Join(dir, "proj", "vis.toml"), "sandbox.jail = false\nsandbox.allow_builds = true\n")
	b := Load(bad, project)
	for _, want := range []string{
		bad + ":3: sandbox.jail: must be true or false, not a string",
		bad + ":4: sandbox.max_threads: must be between 1 and 100000, not 0",
		bad + ":5: sandbox.memory_mb: must be 0 (no cap) or at least 2048",
		bad + ":6: sandbox.roots: holds an empty path",
		bad + ":7: sandbox.colour: unknown key",
		bad + ":8: sandbox.max_attachment_mb: must be between 1 and 16384, not 0",
		bad + ":9: sandbox.max_attachments_mb: must be between 1 and 1048576, not -1",
		bad + ":10: sandbox.max_value_mb: must be between 1 and 1048576, not 0",
		bad + ":11: sandbox.attach_figures: must be true or false, not a string",
		bad + ":12: sandbox.journal_mb: must be between 1 and 1048576, not 0",
		bad + ":13: sandbox.max_disk_mb: must be between 64 and 1048576, not 10",
		bad + ":14: sandbox.history_blocks: must be between 0 (no history) and 10000, not -1",
		project + ":1: sandbox.jail: only the user's config.toml sets the sandbox's jail",
		project + ":2: sandbox.allow_builds: only the user's config.toml",
	} {
		found := false
		for _, p := range b.Problems {
			found = found || strings.HasPrefix(p, want)
		}
		if !found {
			t.Errorf("no problem %q in %q", want, b.Problems)
		}
	}
	if !b.SandboxJail.Value || b.SandboxMaxThreads.Value != 64 || b.SandboxMemoryMB.Value != 4096 || b.SandboxMaxAttachmentMB.Value != 64 {
		t.Errorf("bad entries were not ignored: %+v", b)
	}
}

// TestSandboxNetworkModes: the allow list of the package index unless
// the user's file says otherwise; "on" and true open the network, "off"
// and false close it, "allow" keeps the list (allow_hosts replaces it).
func TestSandboxNetworkModes(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct {
		text          string
		network, list bool
		hosts         []string
	}{
		{"", true, true, []string{"@pypi"}},
		{`network = "on"`, true, false, []string{"@pypi"}},
		{`network = true`, true, false, []string{"@pypi"}},
		{`network = "off"`, false, false, []string{"@pypi"}},
		{`network = false`, false, false, []string{"@pypi"}},
		{`network = "allow"`, true, true, []string{"@pypi"}},
		{"allow_hosts = [\"@pypi\", \"api.example.com\"]", true, true, []string{"@pypi", "api.example.com"}},
		{"allow_hosts = []", true, true, []string{}},
	} {
		s := Load(writeFile(t, filepath.Join(dir, string(rune('a'+i)), "config.toml"), "[sandbox]\n"+c.text+"\n"))
		if len(s.Problems) != 0 || s.SandboxNetwork.Value != c.network || s.SandboxNetworkAllow.Value != c.list ||
			!reflect.DeepEqual(s.SandboxAllowHosts.Value, c.hosts) {
			t.Errorf("%q: network %v, allow list %v %q, problems %q", c.text, s.SandboxNetwork.Value, s.SandboxNetworkAllow.Value, s.SandboxAllowHosts.Value, s.Problems)
		}
	}
}

// TestEntries: every setting has a key (`vis-agent config` shows them
// all), and every key is one the files accept: a file setting each one
// to a valid value is read without a problem, each value from its line.
func TestEntries(t *testing.T) {
	st := reflect.TypeOf(Settings{})
	for i := range st.NumField() {
		f := st.Field(i)
		if strings.HasPrefix(f.Type.Name(), "Setting[") && f.Tag.Get("key") == "" && f.Name != "SandboxNetworkAllow" {
			t.Errorf("%s has no key: vis-agent config would not show it", f.Name)
		}
	}
	entries := defaultSettings().Entries()
	var text strings.Builder
	for _, e := range entries {
		value := e.Value
		if e.Key == "python.index_url" {
			value = `"https://mirror.example/simple"` // the default, "", is no URL
		}
		text.WriteString(e.Key + " = " + value + "\n")
	}
	file := writeFile(t, filepath.Join(t.TempDir(), "config.toml"), text.String())
	s := Load(file)
	if len(s.Problems) != 0 {
		t.Fatalf("problems:\n%s\nin:\n%s", strings.Join(s.Problems, "\n"), text.String())
	}
	for i, e := range s.Entries() {
		if want := file + ":" + strconv.Itoa(i+1); e.From != want {
			t.Errorf("%s from %q, want %q", e.Key, e.From, want)
		}
	}
	if len(entries) < 20 {
		t.Errorf("only %d entries", len(entries))
	}
	// network = "allow" is shown as it is written.
	for _, e := range defaultSettings().Entries() {
		if e.Key == "sandbox.network" && e.Value != `"allow"` {
			t.Errorf("the default network shows as %s", e.Value)
		}
	}
}
