package host

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
)

// The session's disk budget (sandbox.max_disk_mb, Config.DiskBytes): what
// the session's folder holds, whoever wrote it — shell() output (at most
// a quarter of the budget, tools.Spools), the packages install() put
// there, the journal, the snapshot and spill files, the temp folder. The
// host measures the folder before it writes more there for the session
// (a shell() command's output, an install): past the budget, the call
// fails with an OSError saying what holds the space and what to do.
const (
	// diskMeasureAge is how long a measure is trusted: shell() commands
	// started in a burst walk the folder once. packagesMeasureAge is the
	// package folder's, unless an install() ran.
	diskMeasureAge     = 2 * time.Second
	packagesMeasureAge = time.Minute
	// maxDiskEntries bounds the walk: a folder of more files is over the
	// budget.
	maxDiskEntries = 200_000
)

// disk is the last measure of the session's folder.
type disk struct {
	mu       sync.Mutex
	measured time.Time
	parts    map[string]int64 // bytes under each name of the folder
	total    int64
	tooMany  bool
	// packages is when the package folder was last walked: it holds
	// thousands of files, and only install() and the bytecode compile
	// after it change it.
	packages time.Time
}

// packagesDir is the name of the session's package folder in its
// folder (session.Folder.PackagesDir).
const packagesDir = "packages"

// errTooMany stops the walk of a folder of more than maxDiskEntries.
var errTooMany = errors.New("too many files")

// measure walks dir (following no symlink) for the space its files take,
// by name at its top, unless a measure is recent.
func (d *disk) measure(dir string) {
	if time.Since(d.measured) < diskMeasureAge {
		return
	}
	parts := map[string]int64{}
	walkPackages := time.Since(d.packages) >= packagesMeasureAge
	if !walkPackages {
		parts[packagesDir] = d.parts[packagesDir]
	}
	d.parts, d.total, d.tooMany = parts, parts[packagesDir], false
	entries := 0
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil // gone or not readable: not the session's to fill
		}
		top, _, _ := strings.Cut(strings.TrimPrefix(p, dir+string(filepath.Separator)), string(filepath.Separator))
		if top == packagesDir && !walkPackages {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if entries++; entries > maxDiskEntries {
			return errTooMany
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			d.parts[top] += st.Blocks * 512
			d.total += st.Blocks * 512
		}
		return nil
	})
	d.tooMany = errors.Is(err, errTooMany)
	d.measured = time.Now()
	if walkPackages && !d.tooMany {
		d.packages = d.measured
	}
}

// forget drops the measure: install() changed the package folder.
func (d *disk) forget() {
	d.mu.Lock()
	d.measured, d.packages = time.Time{}, time.Time{}
	d.mu.Unlock()
}

// checkDisk refuses (an OSError) what would write more in the session's
// folder once it holds its budget or more; what names the call.
func (h *Host) checkDisk(what string) error {
	if h.cfg.DiskBytes <= 0 {
		return nil
	}
	dir := filepath.Clean(h.cfg.Folder.Dir)
	d := &h.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	d.measure(dir)
	if !d.tooMany && d.total < h.cfg.DiskBytes {
		return nil
	}
	held := "more than " + fmt.Sprint(maxDiskEntries) + " files"
	if !d.tooMany {
		held = hostcalls.SizeText(d.total) + " (" + largest(d.parts, 3) + ")"
	}
	return hostcalls.Errorf("OSError", "%s: the session's disk budget is spent: its folder %s holds %s, past sandbox.max_disk_mb = %d; delete what the session made there (its temp folder is its TMPDIR), or raise sandbox.max_disk_mb in config.toml (vis-agent sandbox rm deletes the session and all of it)",
		what, dir, held, h.cfg.DiskBytes>>20)
}

// largest names the n largest of parts with their sizes.
func largest(parts map[string]int64, n int) string {
	names := make([]string, 0, len(parts))
	for name := range parts {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return parts[names[i]] > parts[names[j]] })
	var out []string
	for _, name := range names[:min(n, len(names))] {
		out = append(out, name+" "+hostcalls.SizeText(parts[name]))
	}
	return strings.Join(out, ", ")
}
