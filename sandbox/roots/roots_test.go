package roots

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
