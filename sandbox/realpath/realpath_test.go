package realpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// tree is a temporary folder, resolved, holding a/b and x/y, a/abs (an
// absolute link to x/y), a/rel (a relative link to ../x), loop (a link
// to itself), dangle (a link to nowhere/file) and file (a regular file).
func tree(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"a/b", "x/y"} {
		if err := os.MkdirAll(filepath.Join(d, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"a/abs": filepath.Join(d, "x", "y"), "a/rel": "../x", "loop": "loop", "dangle": "nowhere/file",
	} {
		if err := os.Symlink(target, filepath.Join(d, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// chain makes n links in d, l0 -> l1 -> ... -> l(n-1) -> target, and
// returns the path of l0.
func chain(t *testing.T, d string, n int, target string) string {
	t.Helper()
	for i := n - 1; i >= 0; i-- {
		next := fmt.Sprintf("l%d", i+1)
		if i == n-1 {
			next = target
		}
		if err := os.Symlink(next, filepath.Join(d, fmt.Sprintf("l%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(d, "l0")
}

// TestWalk: the roots' resolution, of paths that must exist, with the
// folders it passed (where a planted link could lie).
func TestWalk(t *testing.T) {
	d := tree(t)
	for _, c := range []struct {
		path, real string
		passes     string
	}{
		{d + "/a/b", d + "/a/b", d + "/a"},
		{d + "/a/abs", d + "/x/y", d + "/a"},
		{d + "/a/rel/y", d + "/x/y", d + "/x"},
		{d + "/a/rel/../a/b", d + "/a/b", d + "/x"}, // ".." goes up from where rel leads
		{d + "/a/./b/", d + "/a/b", d + "/a/b"},
	} {
		real, passed, err := Walk(c.path)
		if err != nil || real != c.real || !slices.Contains(passed, c.passes) {
			t.Errorf("Walk(%s) = %s %v %v, want %s passing %s", c.path, real, passed, err, c.real, c.passes)
		}
	}
	for _, bad := range []string{d + "/missing", d + "/a/missing/b", d + "/dangle", d + "/loop", d + "/file/x", "relative", ""} {
		if real, _, err := Walk(bad); err == nil {
			t.Errorf("Walk(%s) = %s, want an error", bad, real)
		}
	}
	if _, _, err := Walk(d + "/loop"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Walk of a loop: %v, want ELOOP", err)
	}
}

// TestResolve: the tools' resolution, of paths that need not exist,
// judged by where they would be created.
func TestResolve(t *testing.T) {
	d := tree(t)
	for _, c := range []struct{ path, real string }{
		{d + "/a/b", d + "/a/b"},
		{d + "/a/abs", d + "/x/y"},
		{d + "/a/rel/y", d + "/x/y"},
		{d + "/a/rel/..", d}, // rel's parent is x's: d
		{d + "/a/rel/../a/b", d + "/a/b"},
		{d + "/missing", d + "/missing"},
		{d + "/a/missing/new", d + "/a/missing/new"},
		{d + "/a/rel/missing/new", d + "/x/missing/new"},
		{d + "/a/missing/../b", d + "/a/b"},  // past the missing element, ".." is cleaned as written
		{d + "/dangle", d + "/nowhere/file"}, // a dangling link: where its target would be created
		{d + "/dangle/x", d + "/nowhere/file/x"},
		{"/", "/"},
		{"/..", "/"},
	} {
		real, err := Resolve(c.path)
		if err != nil || real != c.real {
			t.Errorf("Resolve(%s) = %s %v, want %s", c.path, real, err, c.real)
		}
	}
	// A relative path is read from / (callers make paths absolute first).
	if real, err := Resolve("tmp"); err != nil || real != "/tmp" {
		t.Errorf("Resolve(tmp) = %s %v, want /tmp", real, err)
	}
	for _, bad := range []string{d + "/loop", d + "/loop/x"} {
		if _, err := Resolve(bad); !errors.Is(err, syscall.ELOOP) {
			t.Errorf("Resolve(%s): %v, want ELOOP", bad, err)
		}
	}
	if _, err := Resolve(d + "/file/x"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Resolve through a file: %v, want ENOTDIR", err)
	}
}

// TestTrace: every name looked up on the way, each in the real folder
// holding it, links included, and the missing name where it stopped.
func TestTrace(t *testing.T) {
	d := tree(t)
	parents := strings.Split(strings.TrimPrefix(d, "/"), "/")
	var top []string
	for i := range parents {
		top = append(top, "/"+strings.Join(parents[:i+1], "/"))
	}
	for _, c := range []struct {
		path, real string
		names      []string
	}{
		{d + "/a/rel/y", d + "/x/y", []string{d + "/a", d + "/a/rel", d + "/x", d + "/x/y"}},
		{d + "/a/rel/../a/b", d + "/a/b", []string{d + "/a", d + "/a/rel", d + "/x", d + "/a", d + "/a/b"}},
		{d + "/a/missing/new", "", []string{d + "/a", d + "/a/missing"}},
	} {
		real, names := Trace(c.path)
		if want := append(append([]string(nil), top...), c.names...); real != c.real || !slices.Equal(names, want) {
			t.Errorf("Trace(%s) = %s %v, want %s %v", c.path, real, names, c.real, want)
		}
	}
	if real, names := Trace("a/b"); real != "" || names != nil {
		t.Errorf("Trace of a relative path = %s %v, want nothing", real, names)
	}
}

// TestMaxLinks: both entry points follow MaxLinks links, the kernel's
// bound, and refuse one more.
func TestMaxLinks(t *testing.T) {
	for _, n := range []int{MaxLinks, MaxLinks + 1} {
		d := tree(t)
		l0 := chain(t, d, n, "x")
		_, _, werr := Walk(l0 + "/y")
		real, rerr := Resolve(l0 + "/y")
		if n <= MaxLinks {
			if werr != nil || rerr != nil || real != d+"/x/y" {
				t.Errorf("%d links: Walk %v, Resolve %s %v, want %s", n, werr, real, rerr, d+"/x/y")
			}
			continue
		}
		if !errors.Is(werr, syscall.ELOOP) || !errors.Is(rerr, syscall.ELOOP) {
			t.Errorf("%d links: Walk %v, Resolve %v, want ELOOP", n, werr, rerr)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		path, root string
		want       bool
	}{
		{"/a/b", "/a", true},
		{"/a", "/a", true},
		{"/ab", "/a", false},
		{"/a", "/a/b", false},
		{"/a/b", "/a/", true},
		{"/anything", "/", true},
		{"/", "/", true},
	} {
		if got := Within(c.path, c.root); got != c.want {
			t.Errorf("Within(%s, %s) = %v, want %v", c.path, c.root, got, c.want)
		}
	}
}

// TestEval: the path an existing file really is at, as
// filepath.EvalSymlinks answers where both follow the same links, a
// relative path read from the working folder; Canonical falls back to the
// path cleaned, past the kernel's bound too (EvalSymlinks follows 255).
func TestEval(t *testing.T) {
	d := tree(t)
	for _, p := range []string{d + "/a/b", d + "/a/abs", d + "/a/rel/y", d + "/a/rel/../a/b", d + "/file"} {
		want, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		if real, err := Eval(p); err != nil || real != want {
			t.Errorf("Eval(%s) = %s %v, want %s", p, real, err, want)
		}
	}
	t.Chdir(d + "/a")
	for rel, want := range map[string]string{"rel/y": d + "/x/y", "rel/../a/b": d + "/a/b", ".": d + "/a"} {
		if real, err := Eval(rel); err != nil || real != want {
			t.Errorf("Eval(%s) from %s/a = %s %v, want %s", rel, d, real, err, want)
		}
	}
	if real, err := Eval(""); err == nil {
		t.Errorf("Eval(\"\") = %s, want an error", real)
	}
	for _, bad := range []string{d + "/missing", d + "/dangle", d + "/loop", d + "/file/x"} {
		if real, err := Eval(bad); err == nil {
			t.Errorf("Eval(%s) = %s, want an error", bad, real)
		}
		if got := Canonical(bad + "/."); got != bad {
			t.Errorf("Canonical(%s/.) = %s, want %s", bad, got, bad)
		}
	}
	l0 := chain(t, d, MaxLinks+1, "x")
	if got := Canonical(l0); got != l0 {
		t.Errorf("Canonical of %d links = %s, want it unresolved (the kernel would not follow them)", MaxLinks+1, got)
	}
	if got := Canonical(d + "/a/abs"); got != d+"/x/y" {
		t.Errorf("Canonical(%s/a/abs) = %s, want %s/x/y", d, got, d)
	}
}
