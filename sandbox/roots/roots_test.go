package roots

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWalk(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"a/b", "x/y"} {
		os.MkdirAll(filepath.Join(d, dir), 0o755)
	}
	os.Symlink(filepath.Join(d, "x", "y"), filepath.Join(d, "a", "abs"))
	os.Symlink("../x", filepath.Join(d, "a", "rel"))
	os.Symlink("loop", filepath.Join(d, "loop"))
	for _, c := range []struct {
		path, real string
		passes     string
	}{
		{d + "/a/b", d + "/a/b", d + "/a"},
		{d + "/a/abs", d + "/x/y", d + "/a"},
		{d + "/a/rel/y", d + "/x/y", d + "/x"},
		{d + "/a/rel/../a/b", d + "/a/b", d + "/x"}, // ".." goes up from where rel leads
	} {
		real, passed, err := Walk(c.path)
		if err != nil || real != c.real || !slices.Contains(passed, c.passes) {
			t.Errorf("Walk(%s) = %s %v %v, want %s passing %s", c.path, real, passed, err, c.real, c.passes)
		}
	}
	for _, bad := range []string{d + "/missing", d + "/loop", "relative"} {
		if _, _, err := Walk(bad); err == nil {
			t.Errorf("Walk(%s) did not fail", bad)
		}
	}
}

func TestCheckUserAndImport(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, out := filepath.Join(d, "ws"), filepath.Join(d, "out")
	for _, dir := range []string{"ws/ref", "out/lib", "via"} {
		os.MkdirAll(filepath.Join(d, dir), 0o755)
	}
	os.Symlink(ws, filepath.Join(d, "via", "ws"))
	os.Symlink(out, filepath.Join(ws, "door"))
	w := []Writable{{Path: ws, Name: "the workspace"}}

	for _, inside := range []string{ws + "/ref", d + "/via/ws/ref", ws + "/door/lib", ws} {
		if _, err := CheckUser(inside, w); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
			t.Errorf("CheckUser(%s): %v", inside, err)
		}
	}
	for _, ok := range []string{out + "/lib", d, "/"} {
		if _, err := CheckUser(ok, w); err != nil {
			t.Errorf("CheckUser(%s): %v", ok, err)
		}
	}

	for _, c := range []struct {
		path     string
		trusted  bool
		want     string
		readOnly bool
	}{
		{ws + "/ref", false, ws + "/ref", false},
		{ws + "/ref", true, ws + "/ref", false},
		{out + "/lib", false, "", false},
		{"/", false, "", false},
		{out + "/lib", true, out + "/lib", true},
		{ws + "/door/lib", true, "", false}, // out of the workspace through its symlink
		{ws + "/missing", true, "", false},
	} {
		got, ro, why := Import(c.path, c.trusted, w)
		if got != c.want || ro != c.readOnly || (got == "") != (why != "") {
			t.Errorf("Import(%s, %v) = %q %v %q, want %q %v", c.path, c.trusted, got, ro, why, c.want, c.readOnly)
		}
	}
	os.WriteFile(filepath.Join(ws, "vis.toml"), nil, 0o644)
	os.WriteFile(filepath.Join(out, "vis.toml"), nil, 0o644)
	if Trusted(filepath.Join(ws, "vis.toml"), w) || Trusted(filepath.Join(d, "via", "ws", "vis.toml"), w) || !Trusted(filepath.Join(out, "vis.toml"), w) {
		t.Error("Trusted: a file in the workspace is not, one outside is")
	}
}
