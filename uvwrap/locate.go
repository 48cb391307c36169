package uvwrap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/internal/headbuf"
	"github.com/vis-agent/vis-agent/internal/iostreams"
	"github.com/vis-agent/vis-agent/internal/paths"
)

// BundleDir is the folder beside the vis-agent binary that holds uv, in
// release archives and after `make uv` (bin/vis-agent-python/uv).
const BundleDir = "vis-agent-python"

// verifyTimeout bounds `uv --version`. It is generous because the first run
// of a new binary can be slow (macOS checks its signature).
var verifyTimeout = 15 * time.Second

// LocateFor is Locate for a command with streams s: beside the running
// binary, else in its vis-agent folder.
func LocateFor(s iostreams.Streams) (string, error) {
	return Locate(paths.ExeDir(), s.Layout().Home())
}

// Locate returns the absolute path of the uv executable vis-agent uses:
// <exeDir>/vis-agent-python/uv if that is an executable file, else
// <visHome>/python/uv. exeDir is the folder of the vis-agent binary and
// visHome vis-agent's own folder (VIS_HOME, ~/.vis); an empty one is
// skipped. PATH is never searched. Locate does not run the file: Verify
// checks its version.
func Locate(exeDir, visHome string) (string, error) {
	var places []string
	if exeDir != "" {
		places = append(places, filepath.Join(exeDir, BundleDir, "uv"))
	}
	if visHome != "" {
		places = append(places, filepath.Join(visHome, "python", "uv"))
	}
	var looked, problems []string
	for _, p := range places {
		abs, err := filepath.Abs(p)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		shown := display(abs)
		looked = append(looked, shown)
		info, err := os.Stat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			problems = append(problems, shown+": "+fsutil.Cause(err).Error())
		case info.IsDir():
			problems = append(problems, shown+" is a directory")
		case !info.Mode().IsRegular():
			problems = append(problems, shown+" is not a regular file")
		case info.Mode()&0o111 == 0:
			problems = append(problems, shown+" is not executable")
		default:
			return abs, nil
		}
	}
	where := "nowhere to look: no executable folder and no VIS_HOME"
	if len(looked) > 0 {
		where = "looked in " + strings.Join(looked, " and ")
	}
	if len(problems) > 0 {
		where += "; " + strings.Join(problems, "; ")
	}
	return "", fmt.Errorf("uv %s is not installed beside vis-agent (%s); run make uv", Pinned().Version, where)
}

// Verify runs `path --version` and checks that it is the pinned uv: the
// output must be `uv X.Y.Z` with the pinned version, optionally followed by
// a build note in parentheses such as `(x86_64-unknown-linux-gnu)`.
func Verify(path string) error {
	want := Pinned().Version
	// An absolute path keeps exec from searching PATH for a bare name.
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("uv at %s: %w", path, err)
	}
	shown := display(abs)

	ctx, cancel := context.WithTimeout(context.Background(), verifyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, abs, "--version")
	stdout, stderr := &headbuf.Writer{Max: 4096}, &headbuf.Writer{Max: 4096}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A child that keeps the pipes open must not outlive the timeout.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%s --version gave no answer within %s; run make uv", shown, verifyTimeout)
	}
	if err != nil {
		detail := fsutil.Cause(err).Error()
		if msg := firstLine(stderr.Bytes); msg != "" {
			detail += ": " + msg
		}
		return fmt.Errorf("%s could not report its version (%s); run make uv", shown, detail)
	}
	line := firstLine(stdout.Bytes)
	got, ok := parseVersion(line)
	if !ok {
		return fmt.Errorf("%s is not uv: its --version printed %q; run make uv", shown, line)
	}
	if got != want {
		return fmt.Errorf("%s is uv %s, but vis-agent needs uv %s; run make uv", shown, got, want)
	}
	return nil
}

// parseVersion reads `uv X.Y.Z` or `uv X.Y.Z (note)`.
func parseVersion(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "uv ")
	if !ok {
		return "", false
	}
	ver, note, hasNote := strings.Cut(rest, " ")
	if ver == "" {
		return "", false
	}
	if hasNote && (!strings.HasPrefix(note, "(") || !strings.HasSuffix(note, ")")) {
		return "", false
	}
	return ver, true
}

// firstLine is b's first non-blank line, trimmed.
func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// display shortens a path under the home folder to ~/...
func display(path string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == string(filepath.Separator) {
		return path
	}
	if rel, ok := strings.CutPrefix(path, home+string(filepath.Separator)); ok {
		return "~" + string(filepath.Separator) + rel
	}
	return path
}

// VerifyCached is Verify, run once per uv binary: a successful check is
// remembered in the file record with the binary's path, size and
// modification time and the pinned version, and while they are unchanged
// uv is not run again. Running `uv --version` on every call would cost
// more than many uv commands themselves. A record that cannot be written
// only costs the next call a check.
func VerifyCached(path, record string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("uv at %s: %w", path, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("uv at %s: %w", display(abs), fsutil.Cause(err))
	}
	key := fmt.Sprintf("%s\n%d\n%d\n%s\n", abs, info.Size(), info.ModTime().UnixNano(), Pinned().Version)
	if data, err := os.ReadFile(record); err == nil && string(data) == key {
		return nil
	}
	if err := Verify(abs); err != nil {
		return err
	}
	_ = atomicfile.Write(record, []byte(key))
	return nil
}
