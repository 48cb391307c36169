// Package config reads vis-agent's settings: the user's config.toml
// merged with a project's vis.toml, each value with the file and line it
// comes from. Every command, the sandbox host and the jail read settings
// through it.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/internal/tomlbound"
)

// Files are the configuration files of a run in the folder cwd, in order
// of increasing precedence: the user's, then the project's vis.toml,
// beside its pyproject.toml (projectDir), or outside a project the nearest
// one at or above cwd.
func Files(l paths.Layout, projectDir, cwd string) []string {
	files := []string{l.UserConfig()}
	if projectDir != "" {
		return append(files, filepath.Join(projectDir, "vis.toml"))
	}
	if dir := fsutil.FindUp(cwd, "vis.toml"); dir != "" {
		files = append(files, filepath.Join(dir, "vis.toml"))
	}
	return files
}

// Settings is vis-agent's configuration: ~/.vis/config.toml merged with a
// project's vis.toml, the project winning key by key.
//
// Each setting's `key` tag is its name in the files, which `vis-agent
// config` shows (Entries); TestEntries holds the tags to what the files
// accept.
type Settings struct {
	SourcePaths Setting[[]string] `key:"python.source_paths"` // absolute folders
	IndexURL    Setting[string]   `key:"python.index_url"`
	TLSStrict   Setting[bool]     `key:"python.tls_strict"`
	// Sandbox sessions' jail ([sandbox] in the files).
	SandboxJail    Setting[bool] `key:"sandbox.jail"`
	SandboxNetwork Setting[bool] `key:"sandbox.network"`
	// SandboxNetworkAllow: network = "allow", the network through the
	// host's proxy to SandboxAllowHosts only (SandboxDenyHosts refused);
	// the default, with the package index alone (@pypi). It is a value of
	// sandbox.network, not a key of its own.
	SandboxNetworkAllow  Setting[bool]
	SandboxAllowHosts    Setting[[]string] `key:"sandbox.allow_hosts"`
	SandboxDenyHosts     Setting[[]string] `key:"sandbox.deny_hosts"`
	SandboxMaxThreads    Setting[int]      `key:"sandbox.max_threads"` // > 0
	SandboxMemoryMB      Setting[int]      `key:"sandbox.memory_mb"`   // 0 (no cap) or >= MinSandboxMemoryMB
	SandboxRoots         Setting[[]string] `key:"sandbox.roots"`
	SandboxReadOnlyRoots Setting[[]string] `key:"sandbox.read_only_roots"`
	// SandboxMaxAttachmentMB bounds one attachment's size, in MiB;
	// SandboxMaxAttachmentsMB a session's attachments together.
	SandboxMaxAttachmentMB  Setting[int] `key:"sandbox.max_attachment_mb"`
	SandboxMaxAttachmentsMB Setting[int] `key:"sandbox.max_attachments_mb"`
	// SandboxMaxValueMB bounds one value a session's snapshot saves, and
	// SandboxMaxSnapshotMB all of them together (spill files included), in
	// MiB.
	SandboxMaxValueMB    Setting[int] `key:"sandbox.max_value_mb"`
	SandboxMaxSnapshotMB Setting[int] `key:"sandbox.max_snapshot_mb"`
	// SandboxAttachFigures: the matplotlib figures a block leaves open or
	// shows are attached as PNG and closed.
	SandboxAttachFigures Setting[bool] `key:"sandbox.attach_figures"`
	// SandboxAllowBuilds lets install() build source distributions: a
	// build runs the package's setup code outside the jail.
	SandboxAllowBuilds Setting[bool] `key:"sandbox.allow_builds"`
	// SandboxFixFiles has the host write the repair engine's exact fix of
	// a Python file a block left not compiling (else it is only shown).
	SandboxFixFiles Setting[bool] `key:"sandbox.fix_files"`
	// SandboxWarmRestart keeps a standby interpreter for a session whose
	// snapshot needs third-party modules, imported ahead of a restart.
	SandboxWarmRestart Setting[bool] `key:"sandbox.warm_restart"`
	// SandboxEcho shows the repr of a block's trailing expression (not
	// None) after its output, as a notebook's Out.
	SandboxEcho Setting[bool] `key:"sandbox.echo"`
	// SandboxJournalMB bounds a session's journal (the record of its
	// blocks), in MiB: past it the oldest blocks go first.
	SandboxJournalMB Setting[int] `key:"sandbox.journal_mb"`
	// SandboxHistoryBlocks is how many of a session's last blocks keep
	// their snapshot for a rewind (within SandboxMaxSnapshotMB); 0: no
	// history.
	SandboxHistoryBlocks Setting[int] `key:"sandbox.history_blocks"`
	// SandboxMaxDiskMB bounds, in MiB, what a session's host keeps in the
	// session's folder (shell output, installed packages, journal,
	// snapshot, temp files).
	SandboxMaxDiskMB Setting[int] `key:"sandbox.max_disk_mb"`
	// Files are the configuration files that were read.
	Files []string
	// Problems are entries that were ignored, one line each:
	// "file:line: key: what is wrong (the setting is ignored)".
	Problems []string
}

// Entry is one setting as `vis-agent config` shows it: its key, its
// value as TOML and where it comes from.
type Entry struct {
	Key, Value, From string
}

// Entries are every setting, in the order of Settings' fields.
func (s Settings) Entries() []Entry {
	v := reflect.ValueOf(s)
	var entries []Entry
	for i := range v.NumField() {
		key := v.Type().Field(i).Tag.Get("key")
		if key == "" {
			continue
		}
		f := v.Field(i)
		e := Entry{Key: key, Value: tomlValue(f.FieldByName("Value").Interface()), From: f.FieldByName("From").String()}
		if key == "sandbox.network" && s.SandboxNetworkAllow.Value {
			e.Value = `"allow"`
		}
		entries = append(entries, e)
	}
	return entries
}

// tomlValue is v (a bool, int, string or list of strings) as TOML writes
// it.
func tomlValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case []string:
		quoted := make([]string, len(v))
		for i, s := range v {
			quoted[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(quoted, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// Setting is one value and where it came from: "default" or "file:line".
type Setting[T any] struct {
	Value T
	From  string
}

// File is the file the value came from, "" for the default.
func (s Setting[T]) File() string {
	if i := strings.LastIndexByte(s.From, ':'); i > 0 {
		return s.From[:i]
	}
	return ""
}

func defaultSettings() Settings {
	return Settings{
		SourcePaths: Setting[[]string]{From: "default"},
		IndexURL:    Setting[string]{From: "default"},
		TLSStrict:   Setting[bool]{Value: true, From: "default"},

		SandboxJail:          Setting[bool]{Value: true, From: "default"},
		SandboxNetwork:       Setting[bool]{Value: true, From: "default"},
		SandboxNetworkAllow:  Setting[bool]{Value: true, From: "default"},
		SandboxAllowHosts:    Setting[[]string]{Value: []string{"@pypi"}, From: "default"},
		SandboxDenyHosts:     Setting[[]string]{From: "default"},
		SandboxMaxThreads:    Setting[int]{Value: 64, From: "default"},
		SandboxMemoryMB:      Setting[int]{Value: 4096, From: "default"},
		SandboxRoots:         Setting[[]string]{From: "default"},
		SandboxReadOnlyRoots: Setting[[]string]{From: "default"},

		SandboxMaxAttachmentMB:  Setting[int]{Value: 64, From: "default"},
		SandboxMaxAttachmentsMB: Setting[int]{Value: 1024, From: "default"},
		SandboxMaxValueMB:       Setting[int]{Value: 256, From: "default"},
		SandboxMaxSnapshotMB:    Setting[int]{Value: 1024, From: "default"},
		SandboxAttachFigures:    Setting[bool]{Value: true, From: "default"},
		SandboxAllowBuilds:      Setting[bool]{From: "default"},
		SandboxFixFiles:         Setting[bool]{From: "default"},
		SandboxWarmRestart:      Setting[bool]{Value: true, From: "default"},
		SandboxEcho:             Setting[bool]{Value: true, From: "default"},
		SandboxJournalMB:        Setting[int]{Value: 64, From: "default"},
		SandboxHistoryBlocks:    Setting[int]{Value: 50, From: "default"},
		SandboxMaxDiskMB:        Setting[int]{Value: 2048, From: "default"},
	}
}

// MinSandboxMemoryMB is the smallest address-space cap a session's child
// can start under: vis-agent's Go runtime with CPython loaded reserves
// about 1.5 GiB of address space before any Python runs.
const MinSandboxMemoryMB = 2048

// MaxAttachmentMB is the largest sandbox.max_attachment_mb: an attachment
// is written whole to the store, and read whole by read_attachment().
const MaxAttachmentMB = 16384

// MaxAttachmentsMB is the largest sandbox.max_attachments_mb, a session's
// attachments together.
const MaxAttachmentsMB = 1 << 20

// MaxSnapshotMB is the largest sandbox.max_value_mb and
// sandbox.max_snapshot_mb: a session's snapshot lives on the user's disk
// and comes back into the session's memory.
const MaxSnapshotMB = 1 << 20

// MaxHistoryBlocks is the largest sandbox.history_blocks: each block a
// rewind can go to is a file in the session's folder, read at a restore.
const MaxHistoryBlocks = 10_000

// MinDiskMB is the smallest sandbox.max_disk_mb: a session's folder holds
// its journal and snapshot too.
const MinDiskMB = 64

// Load reads the configuration files that exist among files, in
// order of increasing precedence. Problems never stop loading: a broken
// entry is reported and ignored.
func Load(files ...string) Settings {
	s := defaultSettings()
	for _, f := range files {
		data, err := fsutil.ReadRegular(f, fsutil.MaxConfigBytes)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				s.Problems = append(s.Problems, fmt.Sprintf("%s: cannot read: %v", f, err))
			}
			continue
		}
		s.Files = append(s.Files, f)
		s.merge(f, data)
	}
	return s
}

// merge applies one file's entries to s.
func (s *Settings) merge(file string, data []byte) {
	text := string(data)
	// Problems are reported in the file's line order, not the order the
	// keys are visited in.
	type lined struct {
		line int
		text string
	}
	var problems []lined
	problem := func(line int, key, format string, a ...any) {
		problems = append(problems, lined{line, fmt.Sprintf("%s:%d: %s: %s (the setting is ignored)", file, line, key, fmt.Sprintf(format, a...))})
	}
	defer func() {
		sort.SliceStable(problems, func(i, j int) bool { return problems[i].line < problems[j].line })
		for _, p := range problems {
			s.Problems = append(s.Problems, p.text)
		}
	}()
	// A project's vis.toml may be a session's writing (tomlbound).
	if err := tomlbound.Check(text); err != nil {
		s.Problems = append(s.Problems, fmt.Sprintf("%s: %v (the file is ignored)", file, err))
		return
	}
	var top map[string]toml.Primitive
	md, err := toml.Decode(text, &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			s.Problems = append(s.Problems, fmt.Sprintf("%s:%d: not valid TOML: %s (the file is ignored)", file, pe.Position.Line, pe.Message))
		} else {
			s.Problems = append(s.Problems, fmt.Sprintf("%s: not valid TOML: %v (the file is ignored)", file, err))
		}
		return
	}
	for _, key := range sortedKeys(top) {
		prim := top[key]
		if key != "python" && key != "sandbox" {
			problem(keyLine(text, "", key), key, "unknown key")
			continue
		}
		var table map[string]toml.Primitive
		if err := md.PrimitiveDecode(prim, &table); err != nil {
			problem(keyLine(text, "", key), key, "must be a table, not %s", tomlType(md, key))
			continue
		}
		for _, name := range sortedKeys(table) {
			value := table[name]
			full := key + "." + name
			line := keyLine(text, key, name)
			at := fmt.Sprintf("%s:%d", file, line)
			if key == "sandbox" && filepath.Base(file) == "vis.toml" {
				// The workspace is writable by the jailed code: a
				// project's file must not choose its jail.
				problem(line, full, "only the user's config.toml sets the sandbox's jail, not a project's vis.toml")
				continue
			}
			if key == "sandbox" {
				s.mergeSandbox(md, file, name, value, at, func(format string, a ...any) { problem(line, full, format, a...) })
				continue
			}
			switch name {
			case "source_paths":
				var paths []string
				if err := md.PrimitiveDecode(value, &paths); err != nil {
					problem(line, full, "must be a list of strings, not %s", tomlType(md, "python", name))
					continue
				}
				abs, bad := resolvePaths(filepath.Dir(file), paths)
				if bad != "" {
					problem(line, full, "%s", bad)
					continue
				}
				s.SourcePaths = Setting[[]string]{abs, at}
			case "index_url":
				var u string
				if err := md.PrimitiveDecode(value, &u); err != nil {
					problem(line, full, "must be a string, not %s", tomlType(md, "python", name))
					continue
				}
				if bad := checkIndexURL(u); bad != "" {
					problem(line, full, "%s", bad)
					continue
				}
				s.IndexURL = Setting[string]{u, at}
			case "tls_strict":
				var b bool
				if err := md.PrimitiveDecode(value, &b); err != nil {
					problem(line, full, "must be true or false, not %s", tomlType(md, "python", name))
					continue
				}
				s.TLSStrict = Setting[bool]{b, at}
			default:
				problem(line, full, "unknown key")
			}
		}
	}
}

// mergeSandbox applies one [sandbox] entry.
func (s *Settings) mergeSandbox(md toml.MetaData, file, name string, value toml.Primitive, at string, problem func(string, ...any)) {
	decode := func(v any, what string) bool {
		if err := md.PrimitiveDecode(value, v); err != nil {
			problem("must be %s, not %s", what, tomlType(md, "sandbox", name))
			return false
		}
		return true
	}
	var (
		b     bool
		n     int
		paths []string
	)
	switch name {
	case "network":
		// true/false, or "off", "on", "allow" (the allow list).
		var mode string
		if md.PrimitiveDecode(value, &mode) == nil {
			switch mode {
			case "off", "on", "allow":
				s.SandboxNetwork = Setting[bool]{mode != "off", at}
				s.SandboxNetworkAllow = Setting[bool]{mode == "allow", at}
			default:
				problem("must be \"off\", \"on\" or \"allow\" (or true or false), not %q", mode)
			}
			return
		}
		if !decode(&b, "\"off\", \"on\", \"allow\", true or false") {
			return
		}
		s.SandboxNetwork = Setting[bool]{b, at}
		s.SandboxNetworkAllow = Setting[bool]{false, at}
	case "allow_hosts", "deny_hosts":
		var hosts []string
		if !decode(&hosts, "a list of strings") {
			return
		}
		if name == "allow_hosts" {
			s.SandboxAllowHosts = Setting[[]string]{hosts, at}
		} else {
			s.SandboxDenyHosts = Setting[[]string]{hosts, at}
		}
	case "jail", "allow_builds", "fix_files", "echo", "warm_restart":
		if !decode(&b, "true or false") {
			return
		}
		switch name {
		case "jail":
			s.SandboxJail = Setting[bool]{b, at}
		case "fix_files":
			s.SandboxFixFiles = Setting[bool]{b, at}
		case "warm_restart":
			s.SandboxWarmRestart = Setting[bool]{b, at}
		case "echo":
			s.SandboxEcho = Setting[bool]{b, at}
		default:
			s.SandboxAllowBuilds = Setting[bool]{b, at}
		}
	case "max_threads":
		if !decode(&n, "an integer") {
			return
		}
		if n < 1 || n > 100000 {
			problem("must be between 1 and 100000, not %d", n)
			return
		}
		s.SandboxMaxThreads = Setting[int]{n, at}
	case "memory_mb":
		if !decode(&n, "an integer") {
			return
		}
		if n != 0 && (n < MinSandboxMemoryMB || n > 1<<30) {
			problem("must be 0 (no cap) or at least %d (vis-agent and CPython reserve about 1.5 GiB of address space), not %d", MinSandboxMemoryMB, n)
			return
		}
		s.SandboxMemoryMB = Setting[int]{n, at}
	case "max_attachment_mb", "max_attachments_mb":
		if !decode(&n, "an integer") {
			return
		}
		limit, to := MaxAttachmentMB, &s.SandboxMaxAttachmentMB
		if name == "max_attachments_mb" {
			limit, to = MaxAttachmentsMB, &s.SandboxMaxAttachmentsMB
		}
		if n < 1 || n > limit {
			problem("must be between 1 and %d, not %d", limit, n)
			return
		}
		*to = Setting[int]{n, at}
	case "journal_mb":
		if !decode(&n, "an integer") {
			return
		}
		if n < 1 || n > MaxSnapshotMB {
			problem("must be between 1 and %d, not %d", MaxSnapshotMB, n)
			return
		}
		s.SandboxJournalMB = Setting[int]{n, at}
	case "history_blocks":
		if !decode(&n, "an integer") {
			return
		}
		if n < 0 || n > MaxHistoryBlocks {
			problem("must be between 0 (no history) and %d, not %d", MaxHistoryBlocks, n)
			return
		}
		s.SandboxHistoryBlocks = Setting[int]{n, at}
	case "max_disk_mb":
		if !decode(&n, "an integer") {
			return
		}
		if n < MinDiskMB || n > MaxSnapshotMB {
			problem("must be between %d and %d, not %d", MinDiskMB, MaxSnapshotMB, n)
			return
		}
		s.SandboxMaxDiskMB = Setting[int]{n, at}
	case "max_value_mb", "max_snapshot_mb":
		if !decode(&n, "an integer") {
			return
		}
		if n < 1 || n > MaxSnapshotMB {
			problem("must be between 1 and %d, not %d", MaxSnapshotMB, n)
			return
		}
		if name == "max_value_mb" {
			s.SandboxMaxValueMB = Setting[int]{n, at}
		} else {
			s.SandboxMaxSnapshotMB = Setting[int]{n, at}
		}
	case "attach_figures":
		if !decode(&b, "true or false") {
			return
		}
		s.SandboxAttachFigures = Setting[bool]{b, at}
	case "roots", "read_only_roots":
		if !decode(&paths, "a list of strings") {
			return
		}
		abs, bad := resolvePaths(filepath.Dir(file), paths)
		if bad != "" {
			problem("%s", bad)
			return
		}
		if name == "roots" {
			s.SandboxRoots = Setting[[]string]{abs, at}
		} else {
			s.SandboxReadOnlyRoots = Setting[[]string]{abs, at}
		}
	default:
		problem("unknown key")
	}
}

func sortedKeys(m map[string]toml.Primitive) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func tomlType(md toml.MetaData, key ...string) string {
	if t := strings.ToLower(md.Type(key...)); t != "" {
		if strings.ContainsRune("aeiou", rune(t[0])) {
			return "an " + t
		}
		return "a " + t
	}
	return "another type"
}

// resolvePaths makes source paths absolute, relative to the folder of the
// file that names them.
func resolvePaths(base string, paths []string) ([]string, string) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if strings.TrimSpace(p) == "" {
			return nil, "holds an empty path"
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out, ""
}

// checkIndexURL accepts an http(s) URL that carries no credentials (those
// belong in pip's and uv's own configuration, not in a file that is
// printed and shared), or a file:// URL of a local index.
func checkIndexURL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && u.Scheme == "file" && u.Host == "" && strings.HasPrefix(u.Path, "/") {
		return ""
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("must be an http://, https:// or file:/// URL, not %q", raw)
	}
	if u.User != nil {
		return "must not hold credentials; keep them in pip's or uv's own configuration (netrc, keyring)"
	}
	return ""
}

// keyLine finds the line where key is set in table ("" is the top level),
// for messages; BurntSushi/toml keeps key positions to itself. It returns
// 0 when the key cannot be found by this simple reading.
func keyLine(text, table, key string) int {
	current := ""
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "[") {
			current = strings.TrimSpace(strings.Trim(line, "[]"))
			if table == "" && (current == key || strings.HasPrefix(current, key+".")) {
				return i + 1
			}
			continue
		}
		name, _, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		name = strings.Join(strings.Fields(name), "")
		full := name
		if current != "" {
			full = current + "." + name
		}
		want := key
		if table != "" {
			want = table + "." + key
		}
		if full == want || (table == "" && strings.HasPrefix(full, key+".")) {
			return i + 1
		}
	}
	return 0
}
