// Package testwheel builds small, valid wheels for tests: pure Python
// packages, .pth hooks, console scripts and C extensions, so package tests
// run offline with the real pip and uv.
//
// The wheels follow the binary distribution format
// (https://packaging.python.org/en/latest/specifications/binary-distribution-format/):
// a .dist-info folder with METADATA, WHEEL, entry_points.txt (when there are
// console scripts) and RECORD, optional .data/scripts and .data/data files,
// and a deterministic zip: the same Spec gives the same bytes.
package testwheel

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// Spec describes one wheel.
type Spec struct {
	// Name is the distribution name, e.g. "vis-demo". File names use its
	// normalized form (vis_demo).
	Name string
	// Version is the version, e.g. "1.0.0".
	Version string
	// Files maps a slash-separated path inside the wheel, relative to
	// site-packages ("vis_demo/__init__.py", "vis_demo_hook.pth"), to its
	// content.
	Files map[string]string
	// Requires are Requires-Dist lines, in order: "vis-dep>=1.0",
	// `vis-extra-dep; extra == "fast"`.
	Requires []string
	// Extras are Provides-Extra names, in order.
	Extras []string
	// ConsoleScripts maps a command name to its entry point, e.g.
	// "vis-demo" -> "vis_demo.cli:main" (written to entry_points.txt).
	ConsoleScripts map[string]string
	// Scripts are plain script files for <name>-<ver>.data/scripts/,
	// stored executable. A first line "#!python" is rewritten by installers
	// to the target interpreter.
	Scripts map[string]string
	// Data are files for <name>-<ver>.data/data/, e.g.
	// "share/vis-demo/README", installed relative to the scheme's data
	// folder (the prefix; the target folder for pip --target).
	Data map[string]string
	// Tag is the wheel tag, default "py3-none-any". Compressed tag sets
	// ("py2.py3-none-any") are allowed and expanded in WHEEL.
	Tag string
	// RequiresPython is an optional Requires-Python specifier (">=3.10").
	RequiresPython string
}

// DefaultTag is the tag of a wheel whose Spec names none.
const DefaultTag = "py3-none-any"

// Generator is the Generator line of every WHEEL file written here.
const Generator = "vis-agent-testwheel 1.0"

// zipTime is the timestamp of every zip entry, the earliest a zip holds.
var zipTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// Build writes the wheel into dir and returns its path. Fails the test on error.
// The wheel is named WheelName(s) and has Root-Is-Purelib: true; an invalid
// Spec (a bad name, version or tag, a path that is absolute, unclean or
// inside the wheel's own .dist-info or .data folder) fails the test.
func Build(t testing.TB, dir string, s Spec) string {
	t.Helper()
	p, err := Write(dir, s)
	if err != nil {
		t.Fatalf("testwheel: %v", err)
	}
	return p
}

// Write is Build for code that is not a test (benchmark commands): it
// returns the error instead of failing a test.
func Write(dir string, s Spec) (string, error) {
	name, data, err := wheel(s, true, nil)
	if err != nil {
		return "", err
	}
	return writeFile(dir, name, data)
}

func write(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p, err := writeFile(dir, name, data)
	if err != nil {
		t.Fatalf("testwheel: %v", err)
	}
	return p
}

func writeFile(dir, name string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, data, 0o644)
}

var (
	nameRE    = regexp.MustCompile(`^(?i:[a-z0-9]|[a-z0-9][a-z0-9._-]*[a-z0-9])$`)
	separator = regexp.MustCompile(`[-_.]+`)
	tagPartRE = regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$`)
	versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+!_-]*$`)
	extraRE   = nameRE
	scriptRE  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	entryRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)$`)
)

// FileName is the escaped distribution name used in wheel and .dist-info
// file names: lower case, each run of '-', '_' and '.' replaced by '_'
// ("Vis.Demo" -> "vis_demo").
func FileName(name string) string {
	return separator.ReplaceAllString(strings.ToLower(name), "_")
}

// ProjectName is the PEP 503 normalized name used in simple index URLs:
// lower case, each run of '-', '_' and '.' replaced by '-'.
func ProjectName(name string) string {
	return separator.ReplaceAllString(strings.ToLower(name), "-")
}

// WheelName is the file name of the wheel Build writes for s:
// {normalized name}-{version}-{tag}.whl.
func WheelName(s Spec) string {
	tag := s.Tag
	if tag == "" {
		tag = DefaultTag
	}
	return FileName(s.Name) + "-" + escapeVersion(s.Version) + "-" + tag + ".whl"
}

func escapeVersion(v string) string { return strings.ReplaceAll(v, "-", "_") }

// expandTag expands a compressed tag set into the tags it stands for, in
// order: "py2.py3-none-any" -> py2-none-any, py3-none-any.
func expandTag(tag string) ([]string, error) {
	parts := strings.Split(tag, "-")
	if len(parts) != 3 {
		return nil, fmt.Errorf("tag %q: want python-abi-platform", tag)
	}
	for _, p := range parts {
		if !tagPartRE.MatchString(p) {
			return nil, fmt.Errorf("tag %q: bad part %q", tag, p)
		}
	}
	var out []string
	for _, py := range strings.Split(parts[0], ".") {
		for _, abi := range strings.Split(parts[1], ".") {
			for _, plat := range strings.Split(parts[2], ".") {
				out = append(out, py+"-"+abi+"-"+plat)
			}
		}
	}
	return out, nil
}

// checkPath rejects a wheel member path that is not a clean relative slash
// path.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty file path")
	case strings.Contains(p, `\`):
		return fmt.Errorf("file path %q: use '/' as separator", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("file path %q is absolute", p)
	case path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("file path %q is not a clean relative path", p)
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("file path %q names a folder", p)
	}
	return nil
}

type member struct {
	name string
	data []byte
	mode fs.FileMode
}

// wheel assembles the wheel for s: its file name and bytes. purelib is
// Root-Is-Purelib; extra are binary members (extension modules) added to
// s.Files with mode 0755.
func wheel(s Spec, purelib bool, extra map[string][]byte) (string, []byte, error) {
	if !nameRE.MatchString(s.Name) {
		return "", nil, fmt.Errorf("distribution name %q is not valid (letters, digits, '-', '_', '.'; starting and ending with a letter or digit)", s.Name)
	}
	if !versionRE.MatchString(s.Version) {
		return "", nil, fmt.Errorf("%s: version %q is not valid", s.Name, s.Version)
	}
	tag := s.Tag
	if tag == "" {
		tag = DefaultTag
	}
	tags, err := expandTag(tag)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	for _, e := range s.Extras {
		if !extraRE.MatchString(e) {
			return "", nil, fmt.Errorf("%s: extra %q is not a valid name", s.Name, e)
		}
	}
	for _, field := range append(append([]string{s.RequiresPython}, s.Requires...), s.Extras...) {
		if strings.ContainsAny(field, "\r\n") {
			return "", nil, fmt.Errorf("%s: metadata value %q holds a line break", s.Name, field)
		}
	}

	base := FileName(s.Name) + "-" + escapeVersion(s.Version)
	distInfo := base + ".dist-info"
	dataDir := base + ".data"

	var root, data []member
	seen := map[string]bool{}
	add := func(list *[]member, name string, content []byte, mode fs.FileMode) error {
		if seen[name] {
			return fmt.Errorf("%s: %s is given twice", s.Name, name)
		}
		seen[name] = true
		*list = append(*list, member{name, content, mode})
		return nil
	}
	for p, content := range s.Files {
		if err := checkPath(p); err != nil {
			return "", nil, fmt.Errorf("%s: Files: %w", s.Name, err)
		}
		top, _, _ := strings.Cut(p, "/")
		if top == distInfo || top == dataDir {
			return "", nil, fmt.Errorf("%s: Files: %s is inside %s, which the wheel's own files use", s.Name, p, top)
		}
		if err := add(&root, p, []byte(content), 0o644); err != nil {
			return "", nil, err
		}
	}
	for p, content := range extra {
		if err := checkPath(p); err != nil {
			return "", nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		if err := add(&root, p, content, 0o755); err != nil {
			return "", nil, err
		}
	}
	for p, content := range s.Scripts {
		if err := checkPath(p); err != nil || strings.Contains(p, "/") {
			return "", nil, fmt.Errorf("%s: Scripts: %q is not a plain file name", s.Name, p)
		}
		if err := add(&data, dataDir+"/scripts/"+p, []byte(content), 0o755); err != nil {
			return "", nil, err
		}
	}
	for p, content := range s.Data {
		if err := checkPath(p); err != nil {
			return "", nil, fmt.Errorf("%s: Data: %w", s.Name, err)
		}
		if err := add(&data, dataDir+"/data/"+p, []byte(content), 0o644); err != nil {
			return "", nil, err
		}
	}
	byName := func(list []member) {
		sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	}
	byName(root)
	byName(data)

	var meta []member
	meta = append(meta, member{distInfo + "/METADATA", metadata(s), 0o644})
	var w strings.Builder
	fmt.Fprintf(&w, "Wheel-Version: 1.0\nGenerator: %s\nRoot-Is-Purelib: %t\n", Generator, purelib)
	for _, t := range tags {
		fmt.Fprintf(&w, "Tag: %s\n", t)
	}
	meta = append(meta, member{distInfo + "/WHEEL", []byte(w.String()), 0o644})
	if len(s.ConsoleScripts) > 0 {
		var ep strings.Builder
		ep.WriteString("[console_scripts]\n")
		for _, name := range sortedKeys(s.ConsoleScripts) {
			ref := strings.TrimSpace(s.ConsoleScripts[name])
			if !scriptRE.MatchString(name) {
				return "", nil, fmt.Errorf("%s: console script name %q is not valid", s.Name, name)
			}
			if !entryRE.MatchString(ref) {
				return "", nil, fmt.Errorf("%s: console script %s: entry point %q is not module:object", s.Name, name, ref)
			}
			fmt.Fprintf(&ep, "%s = %s\n", name, ref)
		}
		meta = append(meta, member{distInfo + "/entry_points.txt", []byte(ep.String()), 0o644})
	}
	byName(meta)

	all := append(append(root, data...), meta...)
	var record bytes.Buffer
	rw := csv.NewWriter(&record)
	for _, m := range all {
		sum := sha256.Sum256(m.data)
		rw.Write([]string{m.name, "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:]), fmt.Sprint(len(m.data))})
	}
	rw.Write([]string{distInfo + "/RECORD", "", ""})
	rw.Flush()
	if err := rw.Error(); err != nil {
		return "", nil, err
	}
	all = append(all, member{distInfo + "/RECORD", record.Bytes(), 0o644})

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range all {
		h := &zip.FileHeader{Name: m.name, Method: zip.Deflate, Modified: zipTime}
		h.SetMode(m.mode)
		f, err := zw.CreateHeader(h)
		if err != nil {
			return "", nil, err
		}
		if _, err := f.Write(m.data); err != nil {
			return "", nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return "", nil, err
	}
	s.Tag = tag
	return WheelName(s), buf.Bytes(), nil
}

func metadata(s Spec) []byte {
	var b strings.Builder
	b.WriteString("Metadata-Version: 2.1\n")
	fmt.Fprintf(&b, "Name: %s\n", s.Name)
	fmt.Fprintf(&b, "Version: %s\n", s.Version)
	b.WriteString("Summary: test wheel built by internal/testing/testwheel\n")
	if s.RequiresPython != "" {
		fmt.Fprintf(&b, "Requires-Python: %s\n", s.RequiresPython)
	}
	for _, r := range s.Requires {
		fmt.Fprintf(&b, "Requires-Dist: %s\n", r)
	}
	for _, e := range s.Extras {
		fmt.Fprintf(&b, "Provides-Extra: %s\n", e)
	}
	return []byte(b.String())
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
