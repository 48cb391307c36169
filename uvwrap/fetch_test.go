package uvwrap

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fetch-uv.sh's exit statuses.
const (
	fetchUsage    = 2
	fetchDownload = 3
	fetchMismatch = 4
)

// runFetch runs a fetch-uv.sh with args and returns its output and exit
// status. env, when not nil, replaces the PIP_* variables of the test's
// environment.
func runFetch(t *testing.T, script string, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	if env != nil {
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PIP_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, env...)
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatalf("%s %v: %v", script, args, err)
		return "", -1
	}
}

// hostPlatform is the host in uv.pin's terms; the test skips when uv.pin
// has no wheel for it.
func hostPlatform(t *testing.T) string {
	t.Helper()
	skipOnWindows(t)
	plat := runtime.GOOS + "-" + runtime.GOARCH
	if _, ok := Pinned().Wheels[plat]; !ok {
		t.Skipf("uv.pin has no wheel for this host (%s)", plat)
	}
	return plat
}

// skipIfOffline skips when fetch-uv.sh could not download (exit status 3):
// the package index is out of reach, which is no fault of the code.
func skipIfOffline(t *testing.T, out string, code int, also string) {
	t.Helper()
	if code == fetchDownload {
		t.Skipf("cannot download uv (%s)%s", lastLine(out), also)
	}
}

// lastLine is the script's last message, for failure reports.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// TestFetchHost fetches the host's uv into an empty folder, checks what the
// script leaves there, and that a second run has nothing to do.
// needRegistry skips a test that downloads from PyPI unless
// VIS_TEST_REGISTRY=1 (make test-registry): the default suite runs offline.
func needRegistry(t *testing.T) {
	t.Helper()
	if os.Getenv("VIS_TEST_REGISTRY") != "1" {
		t.Skip("downloads from PyPI; run with VIS_TEST_REGISTRY=1 (make test-registry)")
	}
}

func TestFetchHost(t *testing.T) {
	needRegistry(t)
	t.Parallel()
	plat := hostPlatform(t)
	dest := filepath.Join(t.TempDir(), "bundle")
	out, code := runFetch(t, "./fetch-uv.sh", nil, "host", dest)
	skipIfOffline(t, out, code, "")
	if code != 0 {
		t.Fatalf("fetch-uv.sh host: exit %d: %s", code, out)
	}
	uv := filepath.Join(dest, "uv")
	info, err := os.Stat(uv)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o755 {
		t.Errorf("%s has mode %v, want 0755", uv, info.Mode().Perm())
	}
	if err := Verify(uv); err != nil {
		t.Errorf("Verify(fetched uv): %v", err)
	}
	w := Pinned().Wheels[plat]
	stamp, err := os.ReadFile(filepath.Join(dest, "uv.stamp"))
	if err != nil || !strings.HasPrefix(string(stamp), "wheel "+w.File+" "+w.SHA256+"\n") {
		t.Errorf("uv.stamp = %q, %v; want it to name %s %s", stamp, err, w.File, w.SHA256)
	}
	entries, _ := os.ReadDir(dest)
	if len(entries) != 2 {
		t.Errorf("%s holds %d entries, want uv and uv.stamp only", dest, len(entries))
	}

	start := time.Now()
	out, code = runFetch(t, "./fetch-uv.sh", nil, plat, dest)
	if code != 0 || !strings.Contains(out, "already in") || strings.Contains(out, "downloading") {
		t.Errorf("second run: exit %d: %s", code, out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("second run took %s", d)
	}
}

// TestVerifyRealUV checks Verify against the real pinned uv: the one `make
// uv` put in bin/, or else a fresh download.
func TestVerifyRealUV(t *testing.T) {
	t.Parallel()
	hostPlatform(t)
	cached, err := filepath.Abs(filepath.Join("..", "bin", BundleDir, "uv"))
	if err != nil {
		t.Fatal(err)
	}
	cachedErr := Verify(cached)
	uv := cached
	if cachedErr != nil {
		if os.Getenv("VIS_TEST_REGISTRY") != "1" {
			t.Fatalf("%v (make test fetches it with make uv first)", cachedErr)
		}
		dest := t.TempDir()
		out, code := runFetch(t, "./fetch-uv.sh", nil, "host", dest)
		skipIfOffline(t, out, code, ", and no usable cached copy: "+cachedErr.Error())
		if code != 0 {
			t.Fatalf("fetch-uv.sh host: exit %d: %s", code, out)
		}
		uv = filepath.Join(dest, "uv")
	}
	if err := Verify(uv); err != nil {
		t.Fatalf("Verify(%s): %v", uv, err)
	}
	// The real uv, under the bundle layout, is what Locate finds.
	exeDir := t.TempDir()
	bundled := filepath.Join(exeDir, BundleDir, "uv")
	if err := os.MkdirAll(filepath.Dir(bundled), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(uv, bundled); err != nil {
		t.Fatal(err)
	}
	got, err := Locate(exeDir, t.TempDir())
	if err != nil || got != bundled {
		t.Fatalf("Locate = %q, %v; want %q", got, err, bundled)
	}
	if err := Verify(got); err != nil {
		t.Errorf("Verify(located uv): %v", err)
	}
}

// The tests below give pip a folder of made-up wheels instead of an index:
// they need no network, and they check that the script leaves the choice of
// index to pip's configuration.

// offlineEnv makes pip read wheels from links only, ignoring every pip
// configuration file.
func offlineEnv(links string) []string {
	return []string{"PIP_CONFIG_FILE=" + os.DevNull, "PIP_NO_INDEX=1", "PIP_FIND_LINKS=" + links}
}

// fakeWheel writes a wheel of uv version named file into dir, holding uv
// (unless it is empty) as its uv executable, and returns its sha256.
func fakeWheel(t *testing.T, dir, file, version, uv string) string {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	entries := []struct{ name, body string }{
		{"uv-" + version + ".dist-info/METADATA", "Metadata-Version: 2.1\nName: uv\nVersion: " + version + "\n"},
		{"uv-" + version + ".dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-any\n"},
	}
	if uv != "" {
		entries = append(entries, struct{ name, body string }{"uv-" + version + ".data/scripts/uv", uv})
	}
	for _, e := range entries {
		w, err := z.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

// fakeUVScript is a uv executable that reports version.
func fakeUVScript(version string) string {
	return "#!/bin/sh\necho 'uv " + version + " (fake)'\n"
}

// copyScript puts fetch-uv.sh and a uv.pin with the given version and
// platform lines in a new folder, and returns the script's path.
func copyScript(t *testing.T, version string, lines ...string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile("fetch-uv.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fetch-uv.sh"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	pin := "# test pin\nversion " + version + "\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "uv.pin"), []byte(pin), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "fetch-uv.sh")
}

// withOldUV makes a DESTDIR holding an old uv, for failing runs to leave
// alone.
func withOldUV(t *testing.T) string {
	t.Helper()
	dest := t.TempDir()
	if err := os.WriteFile(filepath.Join(dest, "uv"), []byte(oldUV), 0o755); err != nil {
		t.Fatal(err)
	}
	return dest
}

const oldUV = "#!/bin/sh\necho uv 0.0.1\n"

// assertUntouched checks that a failed run left dest as withOldUV made it:
// the old uv, and no partial file beside it.
func assertUntouched(t *testing.T, dest string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dest, "uv"))
	if err != nil || string(got) != oldUV {
		t.Errorf("%s/uv is now %q, %v; want the old %q", dest, got, err, oldUV)
	}
	entries, _ := os.ReadDir(dest)
	for _, e := range entries {
		if e.Name() != "uv" {
			t.Errorf("failed run left %s in %s", e.Name(), dest)
		}
	}
}

// assertFailed checks a run's exit status and that its last line, its
// error, says want.
func assertFailed(t *testing.T, out string, code, wantCode int, want string) {
	t.Helper()
	if code != wantCode || !strings.HasPrefix(lastLine(out), "fetch-uv.sh: ") || !strings.Contains(lastLine(out), want) {
		t.Errorf("exit %d, want %d with an error saying %q; output:\n%s", code, wantCode, want, out)
	}
}

func TestFetchOfflineHost(t *testing.T) {
	t.Parallel()
	plat := hostPlatform(t)
	v, file := Pinned().Version, Pinned().Wheels[plat].File
	links := t.TempDir()
	sum := fakeWheel(t, links, file, v, fakeUVScript(v))
	script := copyScript(t, v, plat+" "+file+" "+sum)
	dest := filepath.Join(t.TempDir(), "new", "bundle")

	out, code := runFetch(t, script, offlineEnv(links), "host", dest)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	uv := filepath.Join(dest, "uv")
	if got, err := os.ReadFile(uv); err != nil || string(got) != fakeUVScript(v) {
		t.Fatalf("%s = %q, %v; want the wheel's uv", uv, got, err)
	}
	if info, err := os.Stat(uv); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("stat %s: %v, %v; want mode 0755", uv, info, err)
	}
	if err := Verify(uv); err != nil {
		t.Errorf("Verify: %v", err)
	}

	out, code = runFetch(t, script, offlineEnv(links), plat, dest)
	if code != 0 || !strings.Contains(out, "already in") || strings.Contains(out, "downloading") {
		t.Errorf("second run: exit %d: %s", code, out)
	}

	// The stamp vouches for the unpacked bytes: any other uv, even one that
	// reports the right version, is replaced.
	if err := os.WriteFile(uv, []byte("#!/bin/sh\necho 'uv "+v+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code = runFetch(t, script, offlineEnv(links), "host", dest)
	if code != 0 || !strings.Contains(out, "downloading") {
		t.Errorf("run over a replaced uv: exit %d: %s", code, out)
	}
	if got, _ := os.ReadFile(uv); string(got) != fakeUVScript(v) {
		t.Errorf("replaced uv was not restored: %q", got)
	}
}

// TestFetchOfflineOtherPlatform fetches for a platform that is not the
// host's: the uv cannot be run, so the stamp alone decides.
func TestFetchOfflineOtherPlatform(t *testing.T) {
	t.Parallel()
	skipOnWindows(t)
	host := runtime.GOOS + "-" + runtime.GOARCH
	var plat string
	for _, p := range []string{"darwin-arm64", "linux-arm64", "linux-amd64"} {
		if p != host {
			plat = p
			break
		}
	}
	v, file := Pinned().Version, Pinned().Wheels[plat].File
	links := t.TempDir()
	// A uv that would fail Verify: it is never run for another platform.
	sum := fakeWheel(t, links, file, v, fakeUVScript("0.0.0"))
	dest := t.TempDir()
	script := copyScript(t, v, plat+" "+file+" "+sum)
	out, code := runFetch(t, script, offlineEnv(links), plat, dest)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	stamp, err := os.ReadFile(filepath.Join(dest, "uv.stamp"))
	if err != nil || !strings.HasPrefix(string(stamp), "wheel "+file+" "+sum+"\n") {
		t.Errorf("uv.stamp = %q, %v", stamp, err)
	}
	out, code = runFetch(t, script, offlineEnv(links), plat, dest)
	if code != 0 || !strings.Contains(out, "already in") {
		t.Errorf("second run: exit %d: %s", code, out)
	}

	// A new pin (another wheel under the same name) is fetched anew.
	links2 := t.TempDir()
	sum2 := fakeWheel(t, links2, file, v, fakeUVScript(v))
	script2 := copyScript(t, v, plat+" "+file+" "+sum2)
	out, code = runFetch(t, script2, offlineEnv(links2), plat, dest)
	if code != 0 || !strings.Contains(out, "downloading") {
		t.Errorf("run after the pin changed: exit %d: %s", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(dest, "uv")); string(got) != fakeUVScript(v) {
		t.Errorf("uv after the pin changed = %q", got)
	}
}

func TestFetchRejectsWrongHash(t *testing.T) {
	t.Parallel()
	plat := hostPlatform(t)
	w := Pinned().Wheels[plat]
	links := t.TempDir()
	// The real uv.pin, and a wheel under the pinned name that is not it.
	sum := fakeWheel(t, links, w.File, Pinned().Version, fakeUVScript(Pinned().Version))
	dest := withOldUV(t)
	out, code := runFetch(t, "./fetch-uv.sh", offlineEnv(links), "host", dest)
	assertFailed(t, out, code, fetchMismatch, "sha256 mismatch for "+w.File+": got "+sum+", uv.pin says "+w.SHA256)
	assertUntouched(t, dest)
}

func TestFetchRejectsOtherFile(t *testing.T) {
	t.Parallel()
	plat := hostPlatform(t)
	v := Pinned().Version
	pinned := "uv-" + v + "-py3-none-" + platformTags(Pinned().Wheels[plat].File)[0] + ".whl"
	// pip takes this one for the pinned tag too, but it is not the pinned
	// file, whatever its hash.
	other := strings.TrimSuffix(pinned, ".whl") + ".any.whl"
	links := t.TempDir()
	sum := fakeWheel(t, links, other, v, fakeUVScript(v))
	script := copyScript(t, v, plat+" "+pinned+" "+sum)
	dest := filepath.Join(t.TempDir(), "bundle")
	out, code := runFetch(t, script, offlineEnv(links), "host", dest)
	assertFailed(t, out, code, fetchMismatch, "pip fetched "+other+" instead of the pinned "+pinned)
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("failed run created DESTDIR (%v)", err)
	}
}

func TestFetchRejectsWheelWithoutUV(t *testing.T) {
	t.Parallel()
	plat := hostPlatform(t)
	v, file := Pinned().Version, Pinned().Wheels[plat].File
	links := t.TempDir()
	sum := fakeWheel(t, links, file, v, "")
	script := copyScript(t, v, plat+" "+file+" "+sum)
	dest := withOldUV(t)
	out, code := runFetch(t, script, offlineEnv(links), "host", dest)
	assertFailed(t, out, code, fetchMismatch, "cannot unpack uv from "+file+": the wheel has no uv-"+v+".data/scripts/uv")
	assertUntouched(t, dest)
}

func TestFetchRejectsUVOfAnotherVersion(t *testing.T) {
	t.Parallel()
	plat := hostPlatform(t)
	v, file := Pinned().Version, Pinned().Wheels[plat].File
	links := t.TempDir()
	sum := fakeWheel(t, links, file, v, fakeUVScript("0.0.2"))
	script := copyScript(t, v, plat+" "+file+" "+sum)
	dest := withOldUV(t)
	out, code := runFetch(t, script, offlineEnv(links), "host", dest)
	assertFailed(t, out, code, fetchMismatch, "the uv in "+file+" does not report version "+v)
	assertUntouched(t, dest)
}

func TestFetchDownloadFailure(t *testing.T) {
	t.Parallel()
	plat := hostPlatform(t)
	dest := withOldUV(t)
	// An index nothing listens on, and no pip configuration besides.
	env := []string{
		"PIP_CONFIG_FILE=" + os.DevNull,
		"PIP_INDEX_URL=http://127.0.0.1:9/simple",
		"PIP_RETRIES=0",
		"PIP_TIMEOUT=5",
	}
	out, code := runFetch(t, "./fetch-uv.sh", env, plat, dest)
	assertFailed(t, out, code, fetchDownload, "pip could not download uv=="+Pinned().Version+" for "+plat)
	assertUntouched(t, dest)
}

func TestFetchUsage(t *testing.T) {
	t.Parallel()
	skipOnWindows(t)
	dest := filepath.Join(t.TempDir(), "d")
	for _, args := range [][]string{
		nil,
		{"host"},
		{"linux-amd64", dest, "extra"},
		{"windows-amd64", dest},
		{"linux-amd64", ""},
	} {
		out, code := runFetch(t, "./fetch-uv.sh", nil, args...)
		if code != fetchUsage || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("fetch-uv.sh %q: exit %d, want %d with one line: %s", args, code, fetchUsage, out)
		}
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("usage errors created DESTDIR (%v)", err)
	}
}
